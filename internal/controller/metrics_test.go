package controller

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// TestMigrationCountedOnceAcrossConflicts: a service whose status moves
// from dual to v1 counts one migration, however many status patches fail
// with a conflict before one lands, and none on the reconciles after.
func TestMigrationCountedOnceAcrossConflicts(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	svc := testService()
	svc.Name = "counted-once"
	svc.Status.InferencePool = &v1alpha2.InferencePoolStatus{Name: "p", Group: build.GroupPoolV1alpha2, MigrationPhase: string(convention.PhaseDual)}
	conflicts := 2
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(svc).WithStatusSubresource(svc).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if conflicts > 0 {
					conflicts--
					return apierrors.NewConflict(schema.GroupResource{Group: v1alpha2.GroupVersion.Group, Resource: "llminferenceservices"}, obj.GetName(), nil)
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	r := &Reconciler{client: c}
	key := client.ObjectKeyFromObject(svc)
	t.Cleanup(func() { phases.forget(key.String()) })
	counter := migrationsTotal.WithLabelValues(string(convention.PhaseV1))
	before := value(t, counter)

	// Each reconcile reads the service again, as a retry does, and wants
	// its status at v1.
	reconcile := func() error {
		got := &v1alpha2.LLMInferenceService{}
		if err := c.Get(t.Context(), key, got); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		p := &pass{svc: got, now: now, conds: newConditions(got, now), status: *got.Status.DeepCopy()}
		p.status.InferencePool = &v1alpha2.InferencePoolStatus{Name: "p", Group: build.GroupPoolV1, MigrationPhase: string(convention.PhaseV1)}
		return r.writeStatus(t.Context(), p)
	}
	for i := range 2 {
		if err := reconcile(); !apierrors.IsConflict(err) {
			t.Fatalf("status patch %d: want the injected conflict, got %v", i+1, err)
		}
		if got := value(t, counter) - before; got != 0 {
			t.Fatalf("after %d failed status patches the migration counted %v times, want 0", i+1, got)
		}
	}
	for i := range 3 {
		if err := reconcile(); err != nil {
			t.Fatalf("reconcile %d after the conflicts: %v", i+1, err)
		}
		if got := value(t, counter) - before; got != 1 {
			t.Fatalf("after the status landed (reconcile %d) the migration counted %v times, want 1", i+1, got)
		}
	}
	if got := value(t, servicesByPhase.WithLabelValues(string(convention.PhaseV1))); got < 1 {
		t.Errorf("odh_serving_services{phase=v1} = %v, want the service counted", got)
	}
}

// value reads a counter or gauge.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if c := out.GetCounter(); c != nil {
		return c.GetValue()
	}
	return out.GetGauge().GetValue()
}
