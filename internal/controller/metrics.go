package controller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Metrics of our own, served with controller-runtime's on /metrics.
var (
	servicesByPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "odh_serving_services",
		Help: "LLMInferenceServices reconciled, by InferencePool migration phase (alpha2, dual, v1, retired; none without a pool).",
	}, []string{"phase"})
	migrationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "odh_serving_migrations_total",
		Help: "InferencePool migration steps done: to=v1 when a route moved to the v1 pool, to=retired when the v1alpha2 pool was removed.",
	}, []string{"to"})
	crdAppliesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "odh_serving_crd_applies_total",
		Help: "CRD lifecycle runs, once a replica leads (at start-up without leader election), by CRD and result.",
	}, []string{"crd", "result"})
)

func init() {
	metrics.Registry.MustRegister(servicesByPhase, migrationsTotal, crdAppliesTotal)
}

// phaseNone labels services without an InferencePool.
const phaseNone = "none"

// phaseGauge keeps servicesByPhase in step with the phase last recorded
// for each service.
type phaseGauge struct {
	mu    sync.Mutex
	byKey map[string]string
}

var phases = &phaseGauge{byKey: map[string]string{}}

// record sets the phase of the service key; from is the phase the service's
// status held before, so a step counts once even across restarts.
func (g *phaseGauge) record(key, from, to string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.byKey[key]; ok {
		servicesByPhase.WithLabelValues(old).Dec()
	}
	g.byKey[key] = to
	servicesByPhase.WithLabelValues(to).Inc()
	if from == to {
		return
	}
	switch {
	case to == string(convention.PhaseV1) && (from == string(convention.PhaseAlpha2) || from == string(convention.PhaseDual)):
		migrationsTotal.WithLabelValues(to).Inc()
	case to == string(convention.PhaseRetired) && from == string(convention.PhaseV1):
		migrationsTotal.WithLabelValues(to).Inc()
	}
}

func (g *phaseGauge) forget(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.byKey[key]; ok {
		servicesByPhase.WithLabelValues(old).Dec()
		delete(g.byKey, key)
	}
}
