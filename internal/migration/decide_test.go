package migration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

const ns = "team-a"

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// service is a service with a recorded phase, annotations and, when since
// is not zero, an InferencePoolMigrated condition that turned True then.
func service(phase convention.Phase, since time.Time, annotations ...string) *v1alpha2.LLMInferenceService {
	s := &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: ns, Annotations: pairs(annotations)}}
	if phase != "" {
		s.Status.InferencePool = &v1alpha2.InferencePoolStatus{Name: "llm-inference-pool", MigrationPhase: string(phase)}
	}
	if !since.IsZero() {
		s.Status.Conditions = []metav1.Condition{{Type: ConditionMigrated, Status: metav1.ConditionTrue, Reason: ReasonGracePeriod, LastTransitionTime: metav1.NewTime(since)}}
	}
	return s
}

func pairs(kv []string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// backends says which pool groups a route sends to.
type backends int

const (
	alpha2Only backends = iota
	both
	v1Only
)

// route is the managed route at generation 2 with the given pool
// backends and parent status.
func route(b backends, parents []gatewayv1.RouteParentStatus, annotations ...string) *gatewayv1.HTTPRoute {
	ref := func(group string, w int32) gatewayv1.HTTPBackendRef {
		g, k := gatewayv1.Group(group), gatewayv1.Kind("InferencePool")
		return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Group: &g, Kind: &k, Name: "llm-inference-pool"}, Weight: &w}}
	}
	var refs []gatewayv1.HTTPBackendRef
	switch b {
	case alpha2Only:
		refs = append(refs, ref(build.GroupPoolV1alpha2, 1))
	case both:
		refs = append(refs, ref(build.GroupPoolV1alpha2, 100), ref(build.GroupPoolV1, 0))
	case v1Only:
		refs = append(refs, ref(build.GroupPoolV1, 1))
	}
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-kserve-route", Namespace: ns, Generation: 2, Annotations: pairs(annotations)},
		Spec:       gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: refs}}},
		Status:     gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: parents}},
	}
}

// resolved is a route parent status from gateway gw: ResolvedRefs with
// status, reason and message, observed at generation gen.
func resolved(gw string, status metav1.ConditionStatus, reason, message string, gen int64) gatewayv1.RouteParentStatus {
	return gatewayv1.RouteParentStatus{
		ParentRef:      gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gw)},
		ControllerName: "istio.io/gateway-controller",
		Conditions: []metav1.Condition{
			{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: gen},
			{Type: "ResolvedRefs", Status: status, Reason: reason, Message: message, ObservedGeneration: gen},
		},
	}
}

func parents(p ...gatewayv1.RouteParentStatus) []gatewayv1.RouteParentStatus { return p }

// poolV1 is the v1 pool at generation 1, accepted (or not) by gateways
// with conditions observed at that generation.
func poolV1(status metav1.ConditionStatus, gateways ...string) *gieapiv1.InferencePool {
	p := &gieapiv1.InferencePool{ObjectMeta: metav1.ObjectMeta{Name: "llm-inference-pool", Namespace: ns, Generation: 1}}
	for _, gw := range gateways {
		p.Status.Parents = append(p.Status.Parents, gieapiv1.ParentStatus{
			ParentRef:  gieapiv1.ParentReference{Kind: "Gateway", Name: gieapiv1.ObjectName(gw)},
			Conditions: []metav1.Condition{{Type: "Accepted", Status: status, Reason: "SupportedByParent", ObservedGeneration: 1}},
		})
	}
	return p
}

// poolAlpha2 is the v1alpha2 pool at generation 1, accepted by gateways.
func poolAlpha2(gateways ...string) *unstructured.Unstructured {
	var ps []any
	for _, gw := range gateways {
		ps = append(ps, map[string]any{
			"parentRef":  map[string]any{"kind": "Gateway", "name": gw},
			"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "observedGeneration": int64(1), "lastTransitionTime": "2026-03-01T11:00:00Z"}},
		})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": build.GroupPoolV1alpha2 + "/v1alpha2", "kind": "InferencePool",
		"metadata": map[string]any{"name": "llm-inference-pool", "namespace": ns, "generation": int64(1)},
		"status":   map[string]any{"parent": ps},
	}}
}

const (
	grace         = 24 * time.Hour
	envoyNoAlpha2 = `Unsupported kind InferencePool of group inference.networking.x-k8s.io`
	envoyNoV1     = `Unsupported kind InferencePool of group inference.networking.k8s.io`
)

func TestDecide(t *testing.T) {
	okRoute := parents(resolved("gw", metav1.ConditionTrue, "ResolvedRefs", "", 2))
	invalidKind := func(msg string) []gatewayv1.RouteParentStatus {
		return parents(resolved("gw", metav1.ConditionFalse, "InvalidKind", msg, 2))
	}
	accepted := poolV1(metav1.ConditionTrue, "gw")
	cases := []struct {
		name string
		why  string
		in   Input
		// both says the test sets V1Served and Alpha2Served; otherwise the
		// case sets them itself.
		both        bool
		want        convention.Phase
		reason      string
		requeue     time.Duration
		msgContains string
	}{
		// Which APIs the cluster serves.
		{name: "no InferencePool API, fresh", why: "undecided services wait at dual, which commits to nothing",
			in: Input{Service: service("", time.Time{})}, want: convention.PhaseDual, reason: ReasonNoPoolAPI},
		{name: "no InferencePool API, recorded alpha2", why: "the recorded phase stays until an API is served",
			in: Input{Service: service(convention.PhaseAlpha2, time.Time{})}, want: convention.PhaseAlpha2, reason: ReasonNoPoolAPI},
		{name: "no InferencePool API, recorded v1", why: "no rollback, even with no API",
			in: Input{Service: service(convention.PhaseV1, now.Add(-time.Hour))}, want: convention.PhaseV1, reason: ReasonV1APIMissing},
		{name: "only v1alpha2 served", why: "nothing to move to",
			in: Input{Service: service("", time.Time{}), Alpha2Served: true}, want: convention.PhaseAlpha2, reason: ReasonV1NotServed},
		{name: "only v1alpha2 served, recorded dual", why: "the v1 API went away before the move; the v1 pool cannot exist",
			in: Input{Service: service(convention.PhaseDual, time.Time{}), Alpha2Served: true}, want: convention.PhaseAlpha2, reason: ReasonV1NotServed},
		{name: "only v1alpha2 served, recorded v1", why: "no rollback from v1",
			in: Input{Service: service(convention.PhaseV1, now.Add(-time.Hour)), Alpha2Served: true}, want: convention.PhaseV1, reason: ReasonV1APIMissing},
		{name: "only v1alpha2 served, route marked", why: "the mark is one way",
			in:   Input{Service: service("", time.Time{}), Route: route(both, nil, AnnotationMigrated, "v1"), Alpha2Served: true},
			want: convention.PhaseV1, reason: ReasonV1APIMissing},
		{name: "only v1 served, fresh", why: "no v1alpha2 pool can exist: v1 pool only, at once",
			in: Input{Service: service("", time.Time{}), V1Served: true}, want: convention.PhaseRetired, reason: ReasonAlpha2NotServed},
		{name: "only v1 served, recorded dual", why: "the v1alpha2 API went away: nothing left to keep",
			in: Input{Service: service(convention.PhaseDual, time.Time{}), V1Served: true}, want: convention.PhaseRetired, reason: ReasonAlpha2NotServed},
		{name: "only v1 served, recorded v1 in grace", why: "no v1alpha2 pool to keep for the grace period",
			in: Input{Service: service(convention.PhaseV1, now.Add(-time.Hour)), V1Served: true}, want: convention.PhaseRetired, reason: ReasonAlpha2NotServed},

		// Both APIs served: dual until the gateway shows evidence.
		{name: "fresh service, no route yet", why: "start at dual and move on the first evidence (kserve#5050)", both: true,
			in: Input{Service: service("", time.Time{})}, want: convention.PhaseDual, reason: ReasonAwaitingRoute},
		{name: "route with no parent status", why: "no gateway has spoken", both: true,
			in: Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, nil), PoolV1: accepted}, want: convention.PhaseDual, reason: ReasonAwaitingGateway},
		{name: "gateway accepts both groups", why: "v1 Accepted and ResolvedRefs True: move, never sit on v1alpha2 (kserve#5050)", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, okRoute), PoolV1: accepted, PoolAlpha2: poolAlpha2("gw")},
			want: convention.PhaseV1, reason: ReasonGatewayAcceptsV1, requeue: grace, msgContains: "gateway team-a/gw accepts"},
		{name: "fresh service whose route resolved", why: "no recorded phase yet; evidence is enough", both: true,
			in:   Input{Service: service("", time.Time{}), Route: route(both, okRoute), PoolV1: accepted},
			want: convention.PhaseV1, reason: ReasonGatewayAcceptsV1, requeue: grace},
		{name: "route resolved but v1 pool not accepted", why: "both signs are needed", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, okRoute), PoolV1: poolV1(metav1.ConditionTrue)},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway, msgContains: "has not accepted the v1 InferencePool"},
		{name: "v1 pool missing", why: "no pool, no acceptance", both: true,
			in: Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, okRoute)}, want: convention.PhaseDual, reason: ReasonAwaitingGateway},
		{name: "v1 pool rejected", why: "Accepted False is not acceptance", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, okRoute), PoolV1: poolV1(metav1.ConditionFalse, "gw")},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway},
		{name: "stale v1 pool acceptance", why: "Accepted observed an older pool generation", both: true,
			in: func() Input {
				p := poolV1(metav1.ConditionTrue, "gw")
				p.Generation = 2
				return Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, okRoute), PoolV1: p}
			}(),
			want: convention.PhaseDual, reason: ReasonAwaitingGateway},
		{name: "stale route ResolvedRefs", why: "ResolvedRefs observed generation 1 of a generation-2 route", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, parents(resolved("gw", metav1.ConditionTrue, "ResolvedRefs", "", 1))), PoolV1: accepted},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway, msgContains: "gateway team-a/gw accepted the v1 InferencePool but has not reported ResolvedRefs for route generation 2"},
		{name: "stale route ResolvedRefs, v1 pool not accepted", why: "the message says which signs are missing", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, parents(resolved("gw", metav1.ConditionTrue, "ResolvedRefs", "", 1)))},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway, msgContains: "gateway team-a/gw has not reported ResolvedRefs for route generation 2"},
		{name: "ResolvedRefs Unknown", why: "no answer yet", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, parents(resolved("gw", metav1.ConditionUnknown, "Pending", "", 2))), PoolV1: accepted},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway},
		{name: "ResolvedRefs False for another reason", why: "the gateway knows both kinds (e.g. BackendNotFound)", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, parents(resolved("gw", metav1.ConditionFalse, "BackendNotFound", "", 2))), PoolV1: accepted},
			want: convention.PhaseV1, reason: ReasonGatewayAcceptsV1, requeue: grace},

		// InvalidKind.
		{name: "gateway accepts only v1", why: "v1 Accepted, so the InvalidKind is the v1alpha2 backend: move at once", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, invalidKind("")), PoolV1: accepted},
			want: convention.PhaseV1, reason: ReasonAlpha2InvalidKind, requeue: grace, msgContains: "rejects the v1alpha2"},
		{name: "gateway accepts only v1alpha2", why: "v1alpha2 Accepted, so the InvalidKind is the v1 backend at weight 0: stay", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, invalidKind("")), PoolAlpha2: poolAlpha2("gw")},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway, msgContains: "InvalidKind"},
		{name: "InvalidKind naming the v1alpha2 group", why: "no pool status, but the message says which kind", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, invalidKind(envoyNoAlpha2))},
			want: convention.PhaseV1, reason: ReasonAlpha2InvalidKind, requeue: grace},
		{name: "InvalidKind naming the v1 group", why: "the v1 backend is the rejected one", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, invalidKind(envoyNoV1))},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway},
		{name: "InvalidKind naming no group", why: "cannot tell which backend; moving could break a v1alpha2-only gateway", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, invalidKind("unsupported backend kind"))},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway},
		{name: "InvalidKind on a v1alpha2-only route", why: "the only pool backend is rejected: v1 at once (ODH's path)", both: true,
			in:   Input{Service: service(convention.PhaseAlpha2, time.Time{}), Route: route(alpha2Only, invalidKind(""))},
			want: convention.PhaseV1, reason: ReasonAlpha2InvalidKind, requeue: grace},
		{name: "stale InvalidKind", why: "observed an older route generation", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, parents(resolved("gw", metav1.ConditionFalse, "InvalidKind", envoyNoAlpha2, 1))), PoolV1: accepted},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway},
		{name: "InvalidKind on a v1-only route", why: "no v1alpha2 backend to blame", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(v1Only, invalidKind(envoyNoAlpha2))},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway},
		{name: "v1alpha2-only route resolved", why: "the route has no v1 backend yet: render dual first", both: true,
			in:   Input{Service: service(convention.PhaseAlpha2, time.Time{}), Route: route(alpha2Only, okRoute), PoolV1: accepted},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway, msgContains: "no v1 InferencePool backend"},
		{name: "ODH v1alpha2-unsupported mark", why: "ODH recorded the gateway's InvalidKind on the service", both: true,
			in:   Input{Service: service("", time.Time{}, AnnotationAlpha2Unsupported, "true")},
			want: convention.PhaseV1, reason: ReasonAlpha2InvalidKind, requeue: grace},

		// Several gateways.
		{name: "two gateways, one accepts v1", why: "every gateway the route is on must route v1", both: true,
			in: Input{Service: service(convention.PhaseDual, time.Time{}),
				Route:  route(both, parents(resolved("gw", metav1.ConditionTrue, "ResolvedRefs", "", 2), resolved("internal", metav1.ConditionTrue, "ResolvedRefs", "", 2))),
				PoolV1: accepted},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway, msgContains: "team-a/internal has not accepted"},
		{name: "two gateways, both accept v1", why: "all evidence in", both: true,
			in: Input{Service: service(convention.PhaseDual, time.Time{}),
				Route:  route(both, parents(resolved("internal", metav1.ConditionTrue, "ResolvedRefs", "", 2), resolved("gw", metav1.ConditionTrue, "ResolvedRefs", "", 2))),
				PoolV1: poolV1(metav1.ConditionTrue, "gw", "internal")},
			want: convention.PhaseV1, reason: ReasonGatewayAcceptsV1, requeue: grace, msgContains: "team-a/gw, team-a/internal"},
		{name: "pool accepted by another gateway", why: "acceptance must come from the gateway the route is on", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, okRoute), PoolV1: poolV1(metav1.ConditionTrue, "other")},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway},
		{name: "parent that is not a gateway", why: "only Gateway parents count", both: true,
			in: func() Input {
				p := resolved("mesh", metav1.ConditionTrue, "ResolvedRefs", "", 2)
				k := gatewayv1.Kind("Service")
				g := gatewayv1.Group("")
				p.ParentRef.Kind, p.ParentRef.Group = &k, &g
				return Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, parents(p)), PoolV1: accepted}
			}(),
			want: convention.PhaseDual, reason: ReasonAwaitingGateway, msgContains: "no gateway has reported"},

		// Marks: one way, both spellings, on the service or the route.
		{name: "route marked, KServe spelling", why: "the mark survives a lost status", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, nil, AnnotationMigrated, "v1")},
			want: convention.PhaseV1, reason: ReasonMarkedMigrated, requeue: grace, msgContains: "on the route"},
		{name: "route marked, ODH spelling", why: "read ODH's key too", both: true,
			in:   Input{Service: service("", time.Time{}), Route: route(both, nil, AnnotationMigratedODH, "v1")},
			want: convention.PhaseV1, reason: ReasonMarkedMigrated, requeue: grace, msgContains: AnnotationMigratedODH},
		{name: "service marked, ODH spelling", why: "ODH puts its mark on the LLMInferenceService", both: true,
			in:   Input{Service: service("", time.Time{}, AnnotationMigratedODH, "v1")},
			want: convention.PhaseV1, reason: ReasonMarkedMigrated, requeue: grace, msgContains: "on the service"},
		{name: "mark with another value", why: "only v1 marks a move", both: true,
			in:   Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, nil, AnnotationMigrated, "v1alpha2")},
			want: convention.PhaseDual, reason: ReasonAwaitingGateway},

		// v1, the grace period and retirement.
		{name: "v1 in the grace period", why: "requeue for the time left", both: true,
			in:   Input{Service: service(convention.PhaseV1, now.Add(-time.Hour))},
			want: convention.PhaseV1, reason: ReasonGracePeriod, requeue: 23 * time.Hour, msgContains: "removed at 2026-03-02T11:00:00Z"},
		{name: "v1, grace period over", why: "retire the v1alpha2 pool", both: true,
			in: Input{Service: service(convention.PhaseV1, now.Add(-25*time.Hour))}, want: convention.PhaseRetired, reason: ReasonRetired},
		{name: "v1, grace period ends now", why: "the boundary retires", both: true,
			in: Input{Service: service(convention.PhaseV1, now.Add(-grace))}, want: convention.PhaseRetired, reason: ReasonRetired},
		{name: "v1 with no condition yet", why: "the grace period starts when the condition turns True", both: true,
			in: Input{Service: service(convention.PhaseV1, time.Time{})}, want: convention.PhaseV1, reason: ReasonGracePeriod, requeue: grace},
		{name: "no rollback when v1 turns NotReady", why: "v1 pool rejected and the route unresolved: still v1", both: true,
			in: Input{Service: service(convention.PhaseV1, now.Add(-time.Hour)),
				Route:  route(both, parents(resolved("gw", metav1.ConditionFalse, "InvalidKind", envoyNoV1, 2)), AnnotationMigrated, "v1"),
				PoolV1: poolV1(metav1.ConditionFalse, "gw"), PoolAlpha2: poolAlpha2("gw")},
			want: convention.PhaseV1, reason: ReasonGracePeriod, requeue: 23 * time.Hour},
		{name: "retired stays retired", why: "no rollback, whatever the cluster serves",
			in: Input{Service: service(convention.PhaseRetired, now.Add(-48*time.Hour)), Alpha2Served: true}, want: convention.PhaseRetired, reason: ReasonRetired},
		{name: "unknown recorded phase", why: "an unreadable phase counts as none", both: true,
			in: func() Input {
				s := service(convention.PhaseV1, time.Time{})
				s.Status.InferencePool.MigrationPhase = "beta"
				return Input{Service: s}
			}(),
			want: convention.PhaseDual, reason: ReasonAwaitingRoute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Now, in.Grace = now, grace
			if tc.both {
				in.V1Served, in.Alpha2Served = true, true
			}
			got := Decide(in)
			if got.Phase != tc.want || got.Reason != tc.reason || got.RequeueAfter != tc.requeue {
				t.Errorf("%s:\ngot  %s/%s requeue %s (%s)\nwant %s/%s requeue %s", tc.why, got.Phase, got.Reason, got.RequeueAfter, got.Message, tc.want, tc.reason, tc.requeue)
			}
			if !strings.Contains(got.Message, tc.msgContains) {
				t.Errorf("message %q does not contain %q", got.Message, tc.msgContains)
			}
			if got.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestDecideZeroGraceRetiresAtOnce(t *testing.T) {
	in := Input{Service: service(convention.PhaseDual, time.Time{}), Route: route(both, parents(resolved("gw", metav1.ConditionTrue, "ResolvedRefs", "", 2))),
		PoolV1: poolV1(metav1.ConditionTrue, "gw"), V1Served: true, Alpha2Served: true, Now: now}
	if got := Decide(in); got.Phase != convention.PhaseRetired || got.RequeueAfter != 0 {
		t.Errorf("with no grace period the move to v1 retires v1alpha2 at once; got %+v", got)
	}
}

// TestDecideNeverRollsBack tries every combination of served APIs, marks,
// route evidence and pools on services recorded at v1 or retired.
func TestDecideNeverRollsBack(t *testing.T) {
	routes := []*gatewayv1.HTTPRoute{
		nil,
		route(both, nil),
		route(both, parents(resolved("gw", metav1.ConditionFalse, "InvalidKind", envoyNoV1, 2))),
		route(alpha2Only, parents(resolved("gw", metav1.ConditionTrue, "ResolvedRefs", "", 2))),
	}
	pools := []*gieapiv1.InferencePool{nil, poolV1(metav1.ConditionFalse, "gw"), poolV1(metav1.ConditionTrue, "gw")}
	n := 0
	for _, recorded := range []convention.Phase{convention.PhaseV1, convention.PhaseRetired} {
		for _, since := range []time.Time{{}, now.Add(-time.Hour), now.Add(-48 * time.Hour)} {
			for _, r := range routes {
				for _, p := range pools {
					for served := range 4 {
						in := Input{Service: service(recorded, since), Route: r, PoolV1: p, PoolAlpha2: poolAlpha2("gw"),
							V1Served: served&1 != 0, Alpha2Served: served&2 != 0, Now: now, Grace: grace}
						got := Decide(in)
						if got.Phase != convention.PhaseV1 && got.Phase != convention.PhaseRetired {
							t.Errorf("recorded %s, route %v, pool %v, served %b: rolled back to %s (%s)", recorded, r != nil, p != nil, served, got.Phase, got.Reason)
						}
						if recorded == convention.PhaseRetired && got.Phase != convention.PhaseRetired {
							t.Errorf("recorded retired went back to %s", got.Phase)
						}
						n++
					}
				}
			}
		}
	}
	if n != 2*3*4*3*4 {
		t.Fatalf("tried %d combinations", n)
	}
}

func TestDecideIsDeterministic(t *testing.T) {
	in := Input{Service: service(convention.PhaseDual, time.Time{}),
		Route: route(both, parents(resolved("z", metav1.ConditionTrue, "ResolvedRefs", "", 2), resolved("a", metav1.ConditionTrue, "ResolvedRefs", "", 2),
			resolved("m", metav1.ConditionFalse, "InvalidKind", "x", 2))),
		V1Served: true, Alpha2Served: true, Now: now, Grace: grace}
	first := Decide(in)
	want := "gateway team-a/a has not accepted the v1 InferencePool; gateway team-a/m rejects a backend kind (InvalidKind: x) and has not accepted the v1 InferencePool; gateway team-a/z has not accepted the v1 InferencePool"
	if first.Message != want {
		t.Errorf("message\ngot  %s\nwant %s", first.Message, want)
	}
	for range 20 {
		if got := Decide(in); got != first {
			t.Fatalf("Decide differs between calls: %+v vs %+v", got, first)
		}
	}
}

func TestUnfinished(t *testing.T) {
	for phase, want := range map[string]bool{"": true, "alpha2": true, "dual": true, "v1": true, "retired": false} {
		if got := Unfinished(phase); got != want {
			t.Errorf("Unfinished(%q) = %v, want %v", phase, got, want)
		}
	}
}

// userRoute is a route of the user's, my-route at generation 3, whose one
// rule sends to backends (pool group or "" for a Service) and whose
// parents report as given.
func userRoute(groups []string, parents []gatewayv1.RouteParentStatus) *gatewayv1.HTTPRoute {
	var refs []gatewayv1.HTTPBackendRef
	for _, group := range groups {
		g, k, name := gatewayv1.Group(group), gatewayv1.Kind("InferencePool"), gatewayv1.ObjectName("llm-inference-pool")
		if group == "" {
			k, name = "Service", "llm-kserve-workload-svc"
		}
		refs = append(refs, gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Group: &g, Kind: &k, Name: name}}})
	}
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "my-route", Namespace: ns, Generation: 3},
		Spec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{
			{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "other"}}}}},
			{BackendRefs: refs},
		}},
		Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: parents}},
	}
}

// TestDecideUserRoutes: a service whose routes are the user's moves on
// their backendRefs and their gateways' status, and says which backendRef
// holds it back.
func TestDecideUserRoutes(t *testing.T) {
	ok := parents(resolved("gw", metav1.ConditionTrue, "ResolvedRefs", "", 3))
	accepted := poolV1(metav1.ConditionTrue, "gw")
	refs := func(routes ...*gatewayv1.HTTPRoute) []RouteRef {
		var out []RouteRef
		for i, rt := range routes {
			name := fmt.Sprintf("route-%d", i)
			if rt != nil {
				name = rt.Name
			}
			out = append(out, RouteRef{Name: name, Route: rt})
		}
		return out
	}
	other := userRoute([]string{build.GroupPoolV1}, ok)
	other.Name = "other-route"
	cases := []struct {
		name     string
		recorded convention.Phase
		since    time.Time
		refs     []RouteRef
		pool     string
		want     convention.Phase
		reason   string
		message  string
	}{
		{name: "a route does not exist", refs: refs(nil), want: convention.PhaseDual, reason: ReasonAwaitingRoute,
			message: "spec.router.route.http.refs[0]: HTTPRoute team-a/route-0 does not exist yet"},
		{name: "a backendRef on the v1alpha2 pool", refs: refs(userRoute([]string{build.GroupPoolV1alpha2}, ok)), want: convention.PhaseDual, reason: ReasonRouteOnV1Alpha2,
			message: "HTTPRoute team-a/my-route rules[1].backendRefs[0] sends to the v1alpha2 InferencePool llm-inference-pool (group inference.networking.x-k8s.io); set its group to inference.networking.k8s.io to move to the v1 pool"},
		{name: "both groups: the v1alpha2 one is named", refs: refs(other, userRoute([]string{build.GroupPoolV1, build.GroupPoolV1alpha2}, ok)), want: convention.PhaseDual, reason: ReasonRouteOnV1Alpha2,
			message: "HTTPRoute team-a/my-route rules[1].backendRefs[1] sends to"},
		{name: "on v1, gateway resolved and accepted", refs: refs(userRoute([]string{build.GroupPoolV1}, ok)), want: convention.PhaseV1, reason: ReasonGatewayAcceptsV1,
			message: "gateway team-a/gw accepts the v1 InferencePool"},
		{name: "two routes on v1 through one gateway", refs: refs(other, userRoute([]string{build.GroupPoolV1}, ok)), want: convention.PhaseV1, reason: ReasonGatewayAcceptsV1,
			message: "gateway team-a/gw accepts the v1 InferencePool and resolves the route"},
		{name: "on v1, ResolvedRefs of an older generation", refs: refs(userRoute([]string{build.GroupPoolV1}, parents(resolved("gw", metav1.ConditionTrue, "ResolvedRefs", "", 2)))),
			want: convention.PhaseDual, reason: ReasonAwaitingGateway, message: "route generation 3"},
		{name: "another pool's v1alpha2 backend", pool: "another-pool", refs: refs(userRoute([]string{build.GroupPoolV1alpha2}, ok)), want: convention.PhaseV1, reason: ReasonNoV1Alpha2Backend,
			message: "no route in spec.router.route.http.refs sends to the v1alpha2 InferencePool another-pool"},
		{name: "routes to a Service only", refs: refs(userRoute([]string{""}, ok)), want: convention.PhaseV1, reason: ReasonNoV1Alpha2Backend},
		{name: "put back on v1alpha2 after the move", recorded: convention.PhaseV1, since: now.Add(-25 * time.Hour),
			refs: refs(userRoute([]string{build.GroupPoolV1alpha2}, ok)), want: convention.PhaseV1, reason: ReasonRouteOnV1Alpha2,
			message: "; the v1alpha2 pool is kept until none does"},
		{name: "moved, grace period over", recorded: convention.PhaseV1, since: now.Add(-25 * time.Hour),
			refs: refs(userRoute([]string{build.GroupPoolV1}, ok)), want: convention.PhaseRetired, reason: ReasonRetired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := tc.pool
			if pool == "" {
				pool = "llm-inference-pool"
			}
			in := Input{Service: service(tc.recorded, tc.since), RouteRefs: tc.refs, Pool: pool, PoolV1: accepted, PoolAlpha2: poolAlpha2("gw"),
				V1Served: true, Alpha2Served: true, Now: now, Grace: grace}
			got := Decide(in)
			if got.Phase != tc.want || got.Reason != tc.reason {
				t.Errorf("got %s/%s (%s), want %s/%s", got.Phase, got.Reason, got.Message, tc.want, tc.reason)
			}
			if !strings.Contains(got.Message, tc.message) {
				t.Errorf("message %q does not contain %q", got.Message, tc.message)
			}
		})
	}
}
