package controller

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

func TestConditionsKeepTransitionTimes(t *testing.T) {
	svc := testService()
	svc.Generation = 2
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	svc.Status.Conditions = []metav1.Condition{{Type: "MainWorkloadReady", Status: metav1.ConditionTrue, Reason: "A", LastTransitionTime: then, ObservedGeneration: 1}}
	c := newConditions(svc, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	c.setBool("MainWorkloadReady", true, "B", "")
	if got := c.get("MainWorkloadReady"); !got.LastTransitionTime.Equal(&then) || got.Reason != "B" || got.ObservedGeneration != 2 {
		t.Errorf("unchanged status: %+v", got)
	}
	c.setBool("MainWorkloadReady", false, "C", "down")
	if got := c.get("MainWorkloadReady"); got.LastTransitionTime.Equal(&then) {
		t.Errorf("a changed status kept its transition time: %+v", got)
	}
}

func TestSumAndReady(t *testing.T) {
	c := newConditions(testService(), time.Now())
	c.setBool(ConditionMainWorkloadReady, true, ReasonReady, "")
	c.setBool(ConditionPrefillWorkloadReady, false, "MinimumReplicasUnavailable", "prefill down")
	c.sum(v1alpha2.ConditionWorkloadsReady, workloadConditions, ReasonReady)
	if got := c.get(v1alpha2.ConditionWorkloadsReady); got.Status != metav1.ConditionFalse || got.Reason != "MinimumReplicasUnavailable" || got.Message != "prefill down" {
		t.Errorf("WorkloadsReady = %+v, want the False sub-condition's reason", got)
	}
	c.sum(v1alpha2.ConditionRouterReady, routerConditions, ReasonNoRouter)
	if got := c.get(v1alpha2.ConditionRouterReady); got.Status != metav1.ConditionTrue || got.Reason != ReasonNoRouter {
		t.Errorf("RouterReady with no router parts = %+v", got)
	}
	c.ready()
	if got := c.get(v1alpha2.ConditionReady); got.Status != metav1.ConditionFalse || got.Reason != "MinimumReplicasUnavailable" {
		t.Errorf("Ready = %+v", got)
	}
	// An actionable reason on RouterReady wins over waiting on workloads.
	c.set(v1alpha2.ConditionRouterReady, metav1.ConditionFalse, ReasonRefsInvalid, "no such route")
	c.ready()
	if got := c.get(v1alpha2.ConditionReady); got.Reason != ReasonRefsInvalid {
		t.Errorf("Ready reason = %s, want RefsInvalid", got.Reason)
	}
	c.remove(ConditionPrefillWorkloadReady)
	c.sum(v1alpha2.ConditionWorkloadsReady, workloadConditions, ReasonReady)
	c.set(v1alpha2.ConditionRouterReady, metav1.ConditionTrue, ReasonReady, "")
	c.ready()
	if got := c.get(v1alpha2.ConditionReady); got.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v once the inapplicable condition is removed", got)
	}
	sorted := c.sorted()
	for i := 1; i < len(sorted); i++ {
		if sorted[i-1].Type > sorted[i].Type {
			t.Fatalf("conditions not sorted: %v", sorted)
		}
	}
}

func routeWithParent(generation int64, conds ...metav1.Condition) *gatewayv1.HTTPRoute {
	rt := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Generation: generation}}
	rt.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}, Conditions: conds}}
	return rt
}

func cnd(t string, ok bool, reason string, gen int64) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: t, Status: s, Reason: reason, ObservedGeneration: gen}
}

func TestRouteVerdict(t *testing.T) {
	for name, tc := range map[string]struct {
		route *gatewayv1.HTTPRoute
		phase convention.Phase
		ok    bool
	}{
		"accepted and resolved":          {routeWithParent(2, cnd("Accepted", true, "Accepted", 2), cnd("ResolvedRefs", true, "ResolvedRefs", 2)), convention.PhaseV1, true},
		"stale acceptance":               {routeWithParent(3, cnd("Accepted", true, "Accepted", 2)), convention.PhaseV1, false},
		"not accepted":                   {routeWithParent(1, cnd("Accepted", false, "NotAllowedByListeners", 1)), convention.PhaseV1, false},
		"no status":                      {routeWithParent(1), convention.PhaseV1, false},
		"invalid kind while dual":        {routeWithParent(1, cnd("Accepted", true, "Accepted", 1), cnd("ResolvedRefs", false, "InvalidKind", 1)), convention.PhaseDual, true},
		"invalid kind with one group":    {routeWithParent(1, cnd("Accepted", true, "Accepted", 1), cnd("ResolvedRefs", false, "InvalidKind", 1)), convention.PhaseRetired, false},
		"backend not found":              {routeWithParent(1, cnd("Accepted", true, "Accepted", 1), cnd("ResolvedRefs", false, "BackendNotFound", 1)), convention.PhaseDual, false},
		"stale refusal of resolved refs": {routeWithParent(2, cnd("Accepted", true, "Accepted", 2), cnd("ResolvedRefs", false, "BackendNotFound", 1)), convention.PhaseV1, true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := routeVerdict(tc.route, tc.phase); got.ok != tc.ok {
				t.Errorf("ready = %v (%s: %s), want %v", got.ok, got.reason, got.message, tc.ok)
			}
		})
	}
}

func TestParentsVerdict(t *testing.T) {
	ok := []metav1.Condition{cnd("Accepted", true, "Accepted", 1), cnd("ResolvedRefs", true, "ResolvedRefs", 1)}
	if v := parentsVerdict("pool", 1, [][]metav1.Condition{ok}); !v.ok {
		t.Errorf("accepted pool not ready: %s", v.message)
	}
	if v := parentsVerdict("pool", 1, nil); v.ok {
		t.Error("a pool no gateway reported on is ready")
	}
	if v := parentsVerdict("pool", 2, [][]metav1.Condition{ok}); v.ok {
		t.Error("stale conditions count")
	}
	if v := parentsVerdict("pool", 1, [][]metav1.Condition{ok, {cnd("Accepted", true, "Accepted", 1)}}); v.ok {
		t.Error("a parent without ResolvedRefs counts as ready")
	}
}

// A service that waited on a CRD and then fails to reconcile says why it
// failed, not that the CRD is missing.
func TestFailureAfterCRDMissingReplacesIt(t *testing.T) {
	svc := testService()
	p := &pass{svc: svc, conds: newConditions(svc, time.Now())}
	p.crdMissing([]kind{{gvk: gvkLWS, crd: crdLWS, workload: true}})
	if got := p.conds.get(v1alpha2.ConditionReady); got.Reason != ReasonCRDMissing {
		t.Fatalf("Ready = %+v, want CRDMissing", got)
	}
	svc.Status.Conditions = p.conds.sorted()

	p = &pass{svc: svc, conds: newConditions(svc, time.Now())}
	p.crdsPresent()
	p.failed(false, errors.New("list LeaderWorkerSet children: boom"))
	for _, c := range p.conds.sorted() {
		if c.Reason == ReasonCRDMissing {
			t.Errorf("%s still says CRDMissing: %s", c.Type, c.Message)
		}
	}
	if got := p.conds.get(v1alpha2.ConditionReady); got.Reason != ReasonReconcileError || got.Message != "list LeaderWorkerSet children: boom" {
		t.Errorf("Ready = %+v, want ReconcileError with the error", got)
	}
}
