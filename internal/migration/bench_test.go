package migration

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// BenchmarkDecide is one reconcile's decision for a dual service whose
// gateway has just shown it routes to v1: the busiest path.
func BenchmarkDecide(b *testing.B) {
	in := Input{Service: service(convention.PhaseDual, now), Route: route(both, parents(resolved("gw", metav1.ConditionTrue, "ResolvedRefs", "", 2))),
		PoolV1: poolV1(metav1.ConditionTrue, "gw"), PoolAlpha2: poolAlpha2("gw"), V1Served: true, Alpha2Served: true, Now: now, Grace: grace}
	b.ReportAllocs()
	for b.Loop() {
		if d := Decide(in); d.Phase != convention.PhaseV1 {
			b.Fatal(d)
		}
	}
}

// BenchmarkApplyWeightsSettled is the static-mode steady state: the route
// is right, so ApplyWeights only checks it and sends nothing.
func BenchmarkApplyWeightsSettled(b *testing.B) {
	rt := route(both, nil, AnnotationMigrated, MigratedValue)
	for i := range rt.Spec.Rules[0].BackendRefs {
		ref := &rt.Spec.Rules[0].BackendRefs[i]
		w := int32(0)
		if *ref.Group == gatewayv1.Group(build.GroupPoolV1) {
			w = 100
		}
		ref.Weight = &w
	}
	b.ReportAllocs()
	for b.Loop() {
		// A nil client: any request would panic.
		if changed, err := ApplyWeights(context.Background(), nil, rt, convention.PhaseV1); changed || err != nil {
			b.Fatal(changed, err)
		}
	}
}
