package controllertest

import (
	"fmt"
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// counterBy reads a counter family of this process's metrics, summed by
// the values of one label.
func counterBy(t *testing.T, family, label string) map[string]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// migrations reads odh_serving_migrations_total{to}.
func migrations(t *testing.T, to convention.Phase) float64 {
	t.Helper()
	return counterBy(t, "odh_serving_migrations_total", "to")[string(to)]
}

// waitPhase waits until the service's status is at the migration phase.
func (e *env) waitPhase(name string, phase convention.Phase) {
	e.t.Helper()
	testenv.Eventually(e.t, fmt.Sprintf("service %s is at phase %s", name, phase), func() error {
		if ip := e.service(name).Status.InferencePool; ip == nil || ip.MigrationPhase != string(phase) {
			return fmt.Errorf("status.inferencePool %+v", ip)
		}
		return nil
	})
}

// TestMigrationCountedOnceAcrossConflicts: the move from dual to v1
// counts one migration in odh_serving_migrations_total, though the status
// patches that record it fail with a conflict twice before one lands and
// the reconciles after read the same old phase until the cache catches up.
func TestMigrationCountedOnceAcrossConflicts(t *testing.T) {
	e := startWithGateway(t)
	e.create(simulator)
	// No gateway has accepted a pool yet: the route stays at dual.
	e.waitPhase("sim", convention.PhaseDual)
	e.waitCondition("sim", "MainWorkloadReady", "True", "")

	before := migrations(t, convention.PhaseV1)
	failed := e.rec.FailFirst(2, "PATCH", "/llminferenceservices/sim/status")
	// The gateway accepts both pools and the route: the route moves to v1.
	e.simulatePools()
	e.simulateRoutes()
	e.waitPhase("sim", convention.PhaseV1)
	e.rec.SetConflict(nil)
	e.waitReady("sim")
	if n := failed(); n != 2 {
		t.Fatalf("%d status patches failed, want 2", n)
	}
	if got := migrations(t, convention.PhaseV1) - before; got != 1 {
		t.Errorf("odh_serving_migrations_total{to=v1} moved by %v, want 1", got)
	}
}
