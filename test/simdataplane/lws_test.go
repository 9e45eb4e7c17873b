package simdataplane_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/test/simdataplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var childLabels = map[string]string{"app.kubernetes.io/part-of": "llminferenceservice", "app.kubernetes.io/name": "svc"}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.invalid/sim:1"}}},
	}
}

// TestIntegrationLeaderWorkerSets: the LWS operator does not run here, so
// the simulator reports LeaderWorkerSets Available; Deployments are left to
// kube-controller-manager (test/kwokcluster) and never touched.
func TestIntegrationLeaderWorkerSets(t *testing.T) {
	const ns = "sim-workloads"
	testenv.EnsureNamespace(t, cp.Client, ns)
	log := startDataPlane(t, simdataplane.Options{})

	create(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-kserve", Namespace: ns, Labels: childLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: childLabels},
			Template: podTemplate(childLabels),
		},
	})
	lws := &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-kserve-mn", Namespace: ns, Labels: childLabels},
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas:             ptr.To[int32](2),
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{Size: ptr.To[int32](4), WorkerTemplate: podTemplate(childLabels)},
			RolloutStrategy:      lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType},
			StartupPolicy:        lwsv1.LeaderCreatedStartupPolicy,
		},
	}
	create(t, lws)

	t.Run("LeaderWorkerSet becomes Available", func(t *testing.T) {
		waitStatus(t, ns, "svc-kserve-mn", func(l *lwsv1.LeaderWorkerSet) error {
			c := meta.FindStatusCondition(l.Status.Conditions, string(lwsv1.LeaderWorkerSetAvailable))
			switch {
			case c == nil || c.Status != metav1.ConditionTrue:
				return fmt.Errorf("Available condition %+v", c)
			case c.ObservedGeneration != l.Generation:
				return fmt.Errorf("Available observedGeneration %d, generation %d", c.ObservedGeneration, l.Generation)
			case l.Status.ReadyReplicas != 2 || l.Status.Replicas != 2:
				return fmt.Errorf("replicas %d ready of %d, want 2", l.Status.ReadyReplicas, l.Status.Replicas)
			}
			return nil
		})
	})

	t.Run("a Deployment is left alone", func(t *testing.T) {
		d := &appsv1.Deployment{}
		if err := get(t, d, ns, "svc-kserve"); err != nil {
			t.Fatal(err)
		}
		if d.Status.ObservedGeneration != 0 || len(d.Status.Conditions) != 0 {
			t.Errorf("the simulator reported on a Deployment: %+v", d.Status)
		}
	})

	for _, want := range []string{
		"[simulated data plane] LeaderWorkerSet sim-workloads/svc-kserve-mn Available: 2/2 groups of 4 pods ready",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}
