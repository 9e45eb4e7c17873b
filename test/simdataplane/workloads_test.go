package simdataplane_test

import (
	"errors"
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

func deployment(ns, name string, labels map[string]string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
}

// deploymentReady checks the status a Deployment controller reports once
// every replica runs, for the Deployment's current generation.
func deploymentReady(d *appsv1.Deployment, replicas int32) error {
	s := d.Status
	if s.ObservedGeneration != d.Generation {
		return fmt.Errorf("observedGeneration %d, generation %d", s.ObservedGeneration, d.Generation)
	}
	if s.Replicas != replicas || s.ReadyReplicas != replicas || s.AvailableReplicas != replicas || s.UpdatedReplicas != replicas {
		return fmt.Errorf("replicas %d/%d/%d/%d, want %d", s.Replicas, s.ReadyReplicas, s.AvailableReplicas, s.UpdatedReplicas, replicas)
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return nil
		}
	}
	return errors.New("no Available=True condition")
}

func TestIntegrationWorkloads(t *testing.T) {
	const ns = "sim-workloads"
	testenv.EnsureNamespace(t, cp.Client, ns)
	log := startDataPlane(t, simdataplane.Options{})

	create(t, deployment(ns, "svc-kserve", childLabels, 3), deployment(ns, "odh-serving-controller", map[string]string{"app": "controller"}, 1))
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

	t.Run("selected Deployment becomes Available", func(t *testing.T) {
		waitStatus(t, ns, "svc-kserve", func(d *appsv1.Deployment) error { return deploymentReady(d, 3) })
	})

	t.Run("a replica change is observed with the new generation", func(t *testing.T) {
		d := &appsv1.Deployment{}
		if err := get(t, d, ns, "svc-kserve"); err != nil {
			t.Fatal(err)
		}
		d.Spec.Replicas = ptr.To[int32](1)
		if err := cp.Client.Update(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, ns, "svc-kserve", func(d *appsv1.Deployment) error {
			if d.Generation < 2 {
				return fmt.Errorf("generation %d after the update", d.Generation)
			}
			return deploymentReady(d, 1)
		})
	})

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

	t.Run("unselected Deployment is left alone", func(t *testing.T) {
		d := &appsv1.Deployment{}
		if err := get(t, d, ns, "odh-serving-controller"); err != nil {
			t.Fatal(err)
		}
		if d.Status.ObservedGeneration != 0 || len(d.Status.Conditions) != 0 {
			t.Errorf("the simulator reported on a Deployment outside its selector: %+v", d.Status)
		}
	})

	for _, want := range []string{
		"[simulated data plane] Deployment sim-workloads/svc-kserve Available: 3/3 replicas ready (generation 1)",
		"[simulated data plane] LeaderWorkerSet sim-workloads/svc-kserve-mn Available: 2/2 groups of 4 pods ready",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}
