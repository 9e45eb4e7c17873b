package controllertest

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

const prefillDecode = testenv.PrefillDecodeService

// reconciles is how many reconciles the service controller has done in
// this process.
func reconciles(tb testing.TB) float64 {
	tb.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller.ControllerName {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// TestZeroWritesInSteadyState: once services have converged, reconciles
// (here forced by a 1 s cache resync) send no write to the API server;
// also with an HPA that scaled one of the workloads.
func TestZeroWritesInSteadyState(t *testing.T) {
	e := startWithGateway(t, func(o *controller.Options) { o.SyncPeriod = time.Second })
	e.create(simulator)
	e.create(prefillDecode)
	e.createHPA("pd-hpa", "apps/v1", "Deployment", "pd-kserve-prefill")
	e.waitReady("sim")
	e.waitReady("pd")
	e.scale(&appsv1.Deployment{}, "pd-kserve-prefill", 3)
	e.waitReady("pd")

	e.assertSteadyState()
	d := &appsv1.Deployment{}
	e.must(e.c.Get(t.Context(), clientKey(e.ns, "pd-kserve-prefill"), d))
	if *d.Spec.Replicas != 3 {
		t.Errorf("pd-kserve-prefill has %d replicas, want the HPA's 3", *d.Spec.Replicas)
	}
}
