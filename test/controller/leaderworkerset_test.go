package controllertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// gpuMultiNode is a multi-node service on the data-parallel CPU simulator
// whose leader and worker each ask for a GPU; image, when set, is the
// leader's main container's.
func gpuMultiNode(image string) string {
	doc := `
metadata:
  name: gmn
spec:
  model:
    name: Qwen/Qwen2.5-0.5B-Instruct
  parallelism:
    data: 2
    dataLocal: 1
  baseRefs:
  - name: kserve-config-llm-dp-cpu-simulator
  template:
    containers:
    - name: main
      resources:
        limits:
          nvidia.com/gpu: "1"
`
	if image != "" {
		doc += "      image: " + image + "\n"
	}
	return doc + `  worker:
    containers:
    - name: main
      resources:
        limits:
          nvidia.com/gpu: "1"
`
}

// TestLeaderWorkerSetRuns: the LeaderWorkerSet operator runs in the
// cluster, so a multi-node service's LeaderWorkerSet gets StatefulSets and
// pods that run on the GPU nodes, and the service's readiness follows the
// operator's status, not the pods' phase: while the leader's readiness
// probe fails (kwok's NeverReady image) both pods run and the service is
// not Ready, naming the LeaderWorkerSet and the pod; with a good image the
// operator rolls the group and reports it Available, and the service is
// Ready. Deleting the service, the garbage collector removes the
// LeaderWorkerSet, its StatefulSets and its pods.
func TestLeaderWorkerSetRuns(t *testing.T) {
	e := start(t)
	svc := e.create(gpuMultiNode(kwokcluster.NeverReady))
	e.waitExists(lws, "gmn-kserve-mn")
	var leader corev1.Pod
	testenv.Within(t, time.Minute, "the LeaderWorkerSet's leader and worker run on GPU nodes", func() error {
		pods := e.lwsPods("gmn-kserve-mn")
		if len(pods) != 2 {
			return fmt.Errorf("%d pods, want a leader and a worker", len(pods))
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || !strings.HasPrefix(p.Spec.NodeName, "kwok-gpu-") {
				return fmt.Errorf("pod %s: %s on node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
			}
			if p.Labels[lwsv1.GroupIndexLabelKey] != "0" || p.Labels[lwsv1.GroupUniqueHashLabelKey] == "" {
				return fmt.Errorf("pod %s lacks the operator's group labels: %v", p.Name, p.Labels)
			}
			if p.Labels[lwsv1.WorkerIndexLabelKey] == "0" {
				leader = p
			}
		}
		return nil
	})
	if sets := e.lwsStatefulSets("gmn-kserve-mn"); len(sets) != 2 {
		t.Errorf("StatefulSets %v, want the leaders' and group 0's workers'", sets)
	}
	want := fmt.Sprintf("LeaderWorkerSet gmn-kserve-mn: 1 of 2 pods not Ready; pod %s ", leader.Name)
	testenv.Eventually(t, "service gmn not Ready while its leader is not", func() error {
		e.simulate()
		s := e.service("gmn")
		for _, ct := range []string{"WorkerWorkloadReady", v1alpha2.ConditionReady} {
			if c := cond(s, ct); c == nil || c.Status != metav1.ConditionFalse || !strings.HasPrefix(c.Message, want) {
				return fmt.Errorf("%s is %+v, want False starting %q", ct, c, want)
			}
		}
		return nil
	})

	e.update("gmn", func(s *v1alpha2.LLMInferenceService) { s.Spec.Template.Containers[0].Image = "" })
	// The operator may report the group Available before the worker
	// StatefulSet has rolled its pod, then Progressing while it does (its
	// Available turns False, keeping the reason AllGroupsReady), then
	// Available again; the service follows each report. So the end of the
	// rollout is a state in which all of these hold at once.
	testenv.Eventually(t, "the rollout ends: the operator reports Available, the pods run the new image, the service is Ready", func() error {
		e.simulate()
		l := &lwsv1.LeaderWorkerSet{}
		if err := e.c.Get(t.Context(), clientKey(e.ns, "gmn-kserve-mn"), l); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(l.Status.Conditions, string(lwsv1.LeaderWorkerSetAvailable)); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "AllGroupsReady" {
			return fmt.Errorf("LeaderWorkerSet gmn-kserve-mn Available %+v, want True, AllGroupsReady, from the operator", c)
		}
		for _, p := range e.lwsPods("gmn-kserve-mn") {
			if p.Spec.Containers[0].Image == kwokcluster.NeverReady {
				return fmt.Errorf("pod %s still runs %s", p.Name, kwokcluster.NeverReady)
			}
		}
		s := e.service("gmn")
		if c := cond(s, v1alpha2.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("service gmn Ready %+v (generation %d, observed %d)", c, s.Generation, s.Status.ObservedGeneration)
		}
		return nil
	})

	e.must(e.c.Delete(t.Context(), svc))
	testenv.Within(t, time.Minute, "the garbage collector removes the LeaderWorkerSet, its StatefulSets and pods", func() error {
		if e.exists(lws(), "gmn-kserve-mn") {
			return fmt.Errorf("LeaderWorkerSet gmn-kserve-mn is still there")
		}
		if sets, pods := e.lwsStatefulSets("gmn-kserve-mn"), e.lwsPods("gmn-kserve-mn"); len(sets)+len(pods) > 0 {
			return fmt.Errorf("StatefulSets %v and %d pods left", sets, len(pods))
		}
		return nil
	})
}

// lwsPods are the pods of the LeaderWorkerSet name in the test namespace.
func (e *env) lwsPods(name string) []corev1.Pod {
	e.t.Helper()
	list := &corev1.PodList{}
	e.must(e.c.List(e.t.Context(), list, client.InNamespace(e.ns), client.MatchingLabels{lwsv1.SetNameLabelKey: name}))
	return list.Items
}

// lwsStatefulSets names the StatefulSets of the LeaderWorkerSet name.
func (e *env) lwsStatefulSets(name string) []string {
	e.t.Helper()
	list := &appsv1.StatefulSetList{}
	e.must(e.c.List(e.t.Context(), list, client.InNamespace(e.ns), client.MatchingLabels{lwsv1.SetNameLabelKey: name}))
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}
