package controllertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// faultyService is a CPU-simulator service whose main container has image
// and, with gpus, asks for that many GPUs.
func faultyService(name, image string, gpus int) string {
	doc := simService(name, "") + `  template:
    containers:
    - name: main
`
	if image != "" {
		doc += "      image: " + image + "\n"
	}
	if gpus > 0 {
		doc += fmt.Sprintf("      resources:\n        limits:\n          nvidia.com/gpu: %q\n", fmt.Sprint(gpus))
	}
	return doc
}

// TestWhyNotReady: a service whose pods are not Ready says why in its
// workload condition, and in Ready: the workload, how many of its pods are
// not Ready, and the first cause in the cluster's words (the pod's own
// reason and message, word for word: the scheduler's Unschedulable message
// reads the whole cluster, so it is read from the pod). The pods are real
// (kube-controller-manager makes them, kube-scheduler places them); kwok
// plays the faults of the kubelet, chosen by the container image
// (test/kwokcluster/stages/faults.yaml): an image that cannot be pulled, a
// crash loop, a readiness probe that fails. Then nothing is written while
// the causes stand.
func TestWhyNotReady(t *testing.T) {
	e := start(t, func(o *controller.Options) { o.SyncPeriod = time.Second })
	cases := []struct {
		name, image string
		gpus        int
		reason      string
		// cause reads the pod's one cause as the scheduler or kwok (the
		// kubelet) wrote it: where it is, its reason and its message,
		// which the service's conditions must carry word for word.
		cause func(p *corev1.Pod) (where, reason, message string, err error)
	}{
		// No node has 16 GPUs: the scheduler's message.
		{"unschedulable", "", 16, "Unschedulable", func(p *corev1.Pod) (string, string, string, error) {
			c := podCondition(p, corev1.PodScheduled)
			if c == nil || c.Status != corev1.ConditionFalse || !strings.HasPrefix(c.Message, "0/6 nodes are available: ") ||
				!strings.Contains(c.Message, "Insufficient nvidia.com/gpu") {
				return "", "", "", fmt.Errorf("pod %s: PodScheduled %+v, want the scheduler's Insufficient nvidia.com/gpu", p.Name, c)
			}
			return "not scheduled", c.Reason, c.Message, nil
		}},
		{"pull", kwokcluster.ImagePullFails, 0, "ImagePullBackOff", waitingCause("ImagePullBackOff")},
		{"crash", kwokcluster.CrashLoop, 0, "CrashLoopBackOff", waitingCause("CrashLoopBackOff")},
		{"probe", kwokcluster.NeverReady, 0, "ContainersNotReady", func(p *corev1.Pod) (string, string, string, error) {
			c := podCondition(p, corev1.PodReady)
			if p.Status.Phase != corev1.PodRunning || c == nil || c.Status != corev1.ConditionFalse || len(p.Status.ContainerStatuses) != 1 ||
				p.Status.ContainerStatuses[0].State.Running == nil {
				return "", "", "", fmt.Errorf("pod %s: %s, Ready %+v, want running and not Ready", p.Name, p.Status.Phase, c)
			}
			return "container main running, readiness probe failing", c.Reason, c.Message, nil
		}},
	}
	for _, tc := range cases {
		e.create(faultyService(tc.name, tc.image, tc.gpus))
	}
	for _, tc := range cases {
		testenv.Eventually(t, "service "+tc.name+" says why its pod is not Ready, in the cluster's words", func() error {
			pods := &corev1.PodList{}
			if err := e.c.List(t.Context(), pods, client.InNamespace(e.ns), client.MatchingLabels{"app.kubernetes.io/name": tc.name}); err != nil {
				return err
			}
			if len(pods.Items) != 1 {
				return fmt.Errorf("%d pods, want 1", len(pods.Items))
			}
			p := &pods.Items[0]
			where, reason, message, err := tc.cause(p)
			if err != nil {
				return err
			}
			if reason != tc.reason {
				return fmt.Errorf("pod %s: reason %s, want %s", p.Name, reason, tc.reason)
			}
			want := fmt.Sprintf("Deployment %s-kserve: 1 of 1 pods not Ready; pod %s %s: %s: %s", tc.name, p.Name, where, reason, message)
			svc := e.service(tc.name)
			for _, ct := range []string{controller.ConditionMainWorkloadReady, v1alpha2.ConditionWorkloadsReady, v1alpha2.ConditionReady} {
				c := cond(svc, ct)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || c.Message != want || c.ObservedGeneration != svc.Generation {
					return fmt.Errorf("%s is %+v, want False, %s, %q", ct, c, tc.reason, want)
				}
			}
			return nil
		})
	}
	// While the causes stand, nothing is written.
	e.assertSteadyState()
}

// waitingCause reads the cause of a pod whose one container waits for
// reason: kwok's fault stages write the reason and a message, as a kubelet
// does.
func waitingCause(reason string) func(p *corev1.Pod) (string, string, string, error) {
	return func(p *corev1.Pod) (string, string, string, error) {
		if len(p.Status.ContainerStatuses) != 1 {
			return "", "", "", fmt.Errorf("pod %s: container statuses %+v", p.Name, p.Status.ContainerStatuses)
		}
		cs := p.Status.ContainerStatuses[0]
		if w := cs.State.Waiting; w == nil || w.Reason != reason || w.Message == "" {
			return "", "", "", fmt.Errorf("pod %s: container %s state %+v, want waiting with %s and a message", p.Name, cs.Name, cs.State, reason)
		}
		return "container " + cs.Name + " waiting", cs.State.Waiting.Reason, cs.State.Waiting.Message, nil
	}
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
