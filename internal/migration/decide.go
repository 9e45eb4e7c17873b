package migration

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Names the controller, the static-mode patch and other tools share.
const (
	// ConditionMigrated is the service condition that is True once the
	// phase is v1 or retired. Its lastTransitionTime starts the grace
	// period before the v1alpha2 pool is retired.
	ConditionMigrated = "InferencePoolMigrated"
	// AnnotationMigrated is the one-way mark odh-serving and KServe write.
	AnnotationMigrated = convention.AnnotationMigrated
	// AnnotationMigratedODH is ODH's spelling of the mark, which ODH puts on
	// the LLMInferenceService. It is read, never written.
	AnnotationMigratedODH = "serving.kserve.io/inferencepool-migrated"
	// AnnotationAlpha2Unsupported is ODH's mark ("true") on a service whose
	// gateway rejected v1alpha2 backends. It is read, never written.
	AnnotationAlpha2Unsupported = "serving.kserve.io/inferencepool-v1alpha2-unsupported"
	// MigratedValue is the value of the migrated mark.
	MigratedValue = "v1"
)

// Reasons of a Decision, for a condition or an event.
const (
	// ReasonNoPoolAPI: neither InferencePool API is served.
	ReasonNoPoolAPI = "InferencePoolAPIMissing"
	// ReasonV1NotServed: only the v1alpha2 API is served (phase alpha2).
	ReasonV1NotServed = "V1APINotServed"
	// ReasonAlpha2NotServed: only the v1 API is served (phase retired).
	ReasonAlpha2NotServed = "V1Alpha2APINotServed"
	// ReasonAwaitingRoute: dual, and the route does not exist yet.
	ReasonAwaitingRoute = "AwaitingRoute"
	// ReasonAwaitingGateway: dual, and no gateway has shown it routes to v1.
	ReasonAwaitingGateway = "AwaitingGateway"
	// ReasonRouteOnV1Alpha2: a route of the user's (route.http.refs) still
	// sends to the v1alpha2 pool; the message says which backendRef to
	// change. Dual, or v1 without retiring the v1alpha2 pool.
	ReasonRouteOnV1Alpha2 = "RouteOnV1Alpha2"
	// ReasonNoV1Alpha2Backend: none of the user's routes sends to the
	// service's pool in either group: nothing holds the v1alpha2 pool
	// (phase v1).
	ReasonNoV1Alpha2Backend = "NoV1Alpha2Backend"
	// ReasonGatewayAcceptsV1: the gateways accepted the v1 pool and resolved
	// the route (phase v1).
	ReasonGatewayAcceptsV1 = "GatewayAcceptsV1"
	// ReasonAlpha2InvalidKind: a gateway rejected the v1alpha2 backend with
	// InvalidKind (phase v1).
	ReasonAlpha2InvalidKind = "V1Alpha2InvalidKind"
	// ReasonMarkedMigrated: the migrated annotation is on the service or the
	// route (phase v1).
	ReasonMarkedMigrated = "MarkedMigrated"
	// ReasonGracePeriod: v1, waiting for the grace period to retire v1alpha2.
	ReasonGracePeriod = "GracePeriod"
	// ReasonRetired: the v1alpha2 pool is gone (phase retired).
	ReasonRetired = "Retired"
	// ReasonV1APIMissing: the service moved to v1 for good but the v1 API is
	// no longer served; it does not roll back.
	ReasonV1APIMissing = "V1APIMissing"
)

// Input is what the controller read for one service.
type Input struct {
	// Service's status.inferencePool.migrationPhase is the recorded phase.
	Service *v1alpha2.LLMInferenceService
	// Route is the managed route as it is live now; nil when none exists yet.
	Route *gatewayv1.HTTPRoute
	// RouteRefs are the user's routes, those spec.router.route.http.refs
	// names, in its order. With them the service has no managed route, and
	// its move follows their backendRefs: the controller does not change
	// them, the user does.
	RouteRefs []RouteRef
	// Pool is the name of the service's InferencePool, managed or
	// referenced: which backendRefs of the user's routes are the service's.
	// Empty matches every InferencePool backendRef.
	Pool string
	// PoolV1 is the live v1 pool or nil.
	PoolV1 *gieapiv1.InferencePool
	// PoolAlpha2 is the live v1alpha2 pool (inference.networking.x-k8s.io) or nil.
	PoolAlpha2 *unstructured.Unstructured
	// V1Served says the v1 InferencePool CRD is established.
	V1Served bool
	// Alpha2Served says the v1alpha2 InferencePool CRD is established.
	Alpha2Served bool
	// Now is the time of the decision.
	Now time.Time
	// Grace is how long the v1alpha2 pool stays after the move to v1.
	Grace time.Duration
}

// RouteRef is one of the user's routes as read.
type RouteRef struct {
	// Name is the route's name, in the service's namespace.
	Name string
	// Route is the live route; nil when it does not exist.
	Route *gatewayv1.HTTPRoute
}

// PoolGroups are the API groups the service's pool was found in: what the
// routes may name a pool the service references but does not manage in.
func (in Input) PoolGroups() []string {
	var groups []string
	if in.PoolV1 != nil {
		groups = append(groups, build.GroupPoolV1)
	}
	if in.PoolAlpha2 != nil {
		groups = append(groups, build.GroupPoolV1alpha2)
	}
	return groups
}

// Decision is the phase to render with and why.
type Decision struct {
	// Phase is what to render with (engine.Options.Phase).
	Phase convention.Phase
	// Reason is CamelCase, for a condition or an event.
	Reason string
	// Message says the same for people. It holds no clock readings that
	// change between reconciles, so a settled service's status stays put.
	Message string
	// RequeueAfter is >0 when a time-based step (retirement) is pending.
	RequeueAfter time.Duration
}

// onlyV1API is the decision when only the v1 API is served: no v1alpha2 pool
// can exist, so there is nothing to keep for a grace period.
var onlyV1API = Decision{Phase: convention.PhaseRetired, Reason: ReasonAlpha2NotServed,
	Message: "the v1alpha2 InferencePool API is not served; the route uses the v1 pool only"}

// Decide says which phase the service's route is in. See the package
// documentation for the rules.
func Decide(in Input) Decision {
	recorded := recordedPhase(in.Service)
	if recorded == convention.PhaseRetired {
		return Decision{Phase: convention.PhaseRetired, Reason: ReasonRetired,
			Message: "the v1alpha2 InferencePool is retired; the route sends all traffic to the v1 pool"}
	}
	if mark := migratedMark(in.Service, in.Route); recorded == convention.PhaseV1 || mark != "" {
		return migrated(in, recorded, mark)
	}
	switch {
	case !in.V1Served && !in.Alpha2Served:
		p := recorded
		if p == "" {
			p = convention.PhaseDual
		}
		return Decision{Phase: p, Reason: ReasonNoPoolAPI,
			Message: "neither InferencePool API (inference.networking.k8s.io/v1, inference.networking.x-k8s.io/v1alpha2) is served"}
	case !in.V1Served:
		return Decision{Phase: convention.PhaseAlpha2, Reason: ReasonV1NotServed,
			Message: "the v1 InferencePool API is not served; the route uses the v1alpha2 pool"}
	case !in.Alpha2Served:
		return onlyV1API
	}
	ev := gatewayEvidence(in)
	if !ev.moved {
		return Decision{Phase: convention.PhaseDual, Reason: ev.reason, Message: ev.message}
	}
	if d, done := retire(in); done {
		return d
	}
	return Decision{Phase: convention.PhaseV1, Reason: ev.reason, Message: ev.message, RequeueAfter: retireAt(in).Sub(in.Now)}
}

// migrated decides for a service that already moved to v1 for good.
func migrated(in Input, recorded convention.Phase, mark string) Decision {
	switch {
	case !in.V1Served:
		return Decision{Phase: convention.PhaseV1, Reason: ReasonV1APIMissing,
			Message: "the route moved to the v1 InferencePool for good, but the v1 API is not served; it does not roll back to v1alpha2"}
	case !in.Alpha2Served:
		return onlyV1API
	}
	if on := refsOnAlpha2(in); len(on) > 0 {
		// The v1alpha2 pool stays while a route of the user's sends to it.
		return Decision{Phase: convention.PhaseV1, Reason: ReasonRouteOnV1Alpha2,
			Message: onAlpha2Message(on, in.Pool) + "; the v1alpha2 pool is kept until none does"}
	}
	if d, done := retire(in); done {
		return d
	}
	at := retireAt(in)
	d := Decision{Phase: convention.PhaseV1, Reason: ReasonGracePeriod, RequeueAfter: at.Sub(in.Now),
		Message: fmt.Sprintf("traffic is on the v1 InferencePool; the v1alpha2 pool is removed at %s", at.UTC().Format(time.RFC3339))}
	if recorded != convention.PhaseV1 {
		d.Reason = ReasonMarkedMigrated
		d.Message = fmt.Sprintf("the %s marks the route as moved to v1", mark)
	}
	return d
}

// retire reports the retired decision once the grace period is over.
func retire(in Input) (Decision, bool) {
	if in.Now.Before(retireAt(in)) {
		return Decision{}, false
	}
	return Decision{Phase: convention.PhaseRetired, Reason: ReasonRetired,
		Message: fmt.Sprintf("the migration grace period (%s) is over; the v1alpha2 pool and its route backend are removed", in.Grace)}, true
}

// retireAt is the end of the grace period: Grace after the service's
// InferencePoolMigrated condition turned True, or after now when it has not.
func retireAt(in Input) time.Time {
	since := in.Now
	if in.Service != nil {
		c := meta.FindStatusCondition(in.Service.Status.Conditions, ConditionMigrated)
		if c != nil && c.Status == metav1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			since = c.LastTransitionTime.Time
		}
	}
	return since.Add(in.Grace)
}

func recordedPhase(svc *v1alpha2.LLMInferenceService) convention.Phase {
	if svc == nil || svc.Status.InferencePool == nil {
		return ""
	}
	p, err := convention.ParsePhase(svc.Status.InferencePool.MigrationPhase)
	if err != nil {
		return ""
	}
	return p
}

// migratedMark names the first migrated annotation found on the service or
// the route, in either spelling, or is empty.
func migratedMark(svc *v1alpha2.LLMInferenceService, route *gatewayv1.HTTPRoute) string {
	type holder struct {
		what        string
		annotations map[string]string
	}
	var holders []holder
	if svc != nil {
		holders = append(holders, holder{"service", svc.Annotations})
	}
	if route != nil {
		holders = append(holders, holder{"route", route.Annotations})
	}
	for _, h := range holders {
		for _, key := range []string{AnnotationMigrated, AnnotationMigratedODH} {
			if strings.EqualFold(strings.TrimSpace(h.annotations[key]), MigratedValue) {
				return fmt.Sprintf("annotation %s on the %s", key, h.what)
			}
		}
	}
	return ""
}

// evidence is what the gateways say about moving to v1.
type evidence struct {
	moved   bool
	reason  string
	message string
}

// gatewayEvidence reads the route's parent status and the pools' parent
// status. Every gateway the route reports on must show it can route to v1.
func gatewayEvidence(in Input) evidence {
	if in.Service != nil && strings.EqualFold(in.Service.Annotations[AnnotationAlpha2Unsupported], "true") {
		return evidence{moved: true, reason: ReasonAlpha2InvalidKind,
			message: fmt.Sprintf("the service is marked %s: the gateway rejects v1alpha2 backends", AnnotationAlpha2Unsupported)}
	}
	if len(in.RouteRefs) > 0 {
		return refsEvidence(in)
	}
	if in.Route == nil {
		return evidence{reason: ReasonAwaitingRoute,
			message: "the route does not exist yet; it starts with the v1alpha2 pool at weight 100 and the v1 pool at 0"}
	}
	return summarize(routeReports(in, in.Route))
}

// refsEvidence is gatewayEvidence for the user's routes. They move when
// every one exists and none sends to the v1alpha2 pool; those that send to
// the v1 pool need the same evidence from their gateways as the managed
// route.
func refsEvidence(in Input) evidence {
	var missing []string
	var reports []report
	named := false
	for i, ref := range in.RouteRefs {
		if ref.Route == nil {
			missing = append(missing, fmt.Sprintf("spec.router.route.http.refs[%d]: HTTPRoute %s/%s does not exist yet", i, namespaceOf(in), ref.Name))
			continue
		}
		if v1, _ := poolBackends(ref.Route, in.Pool); v1 {
			named = true
			reports = append(reports, routeReports(in, ref.Route)...)
		}
	}
	if len(missing) > 0 {
		return evidence{reason: ReasonAwaitingRoute, message: strings.Join(missing, "; ")}
	}
	if on := refsOnAlpha2(in); len(on) > 0 {
		return evidence{reason: ReasonRouteOnV1Alpha2, message: onAlpha2Message(on, in.Pool)}
	}
	if !named {
		return evidence{moved: true, reason: ReasonNoV1Alpha2Backend,
			message: fmt.Sprintf("no route in spec.router.route.http.refs sends to the v1alpha2 InferencePool %s", in.Pool)}
	}
	return summarize(reports)
}

// refsOnAlpha2 names each backendRef of the user's routes that sends to
// the service's v1alpha2 pool: HTTPRoute namespace/name
// rules[i].backendRefs[j].
func refsOnAlpha2(in Input) []string {
	var out []string
	for _, ref := range in.RouteRefs {
		rt := ref.Route
		if rt == nil {
			continue
		}
		for i, rule := range rt.Spec.Rules {
			for j, b := range rule.BackendRefs {
				if backendGroup(b, rt.Namespace, in.Pool) == build.GroupPoolV1alpha2 {
					out = append(out, fmt.Sprintf("HTTPRoute %s/%s rules[%d].backendRefs[%d]", rt.Namespace, rt.Name, i, j))
				}
			}
		}
	}
	return out
}

// onAlpha2Message says what the user must change to move.
func onAlpha2Message(on []string, pool string) string {
	return fmt.Sprintf("%s sends to the v1alpha2 InferencePool %s (group %s); set its group to %s to move to the v1 pool",
		strings.Join(on, ", "), pool, build.GroupPoolV1alpha2, build.GroupPoolV1)
}

func namespaceOf(in Input) string {
	if in.Service == nil {
		return ""
	}
	return in.Service.Namespace
}

// report is what one gateway says about one route.
type report struct {
	gateway string
	ok      bool
	kind    bool // the v1alpha2 backend was rejected with InvalidKind
	why     string
}

// routeReports reads what each gateway reports on rt.
func routeReports(in Input, rt *gatewayv1.HTTPRoute) []report {
	hasV1, hasAlpha2 := poolBackends(rt, in.Pool)
	v1Parents := v1PoolParents(in.PoolV1)
	alpha2Parents := alpha2PoolParents(in.PoolAlpha2)
	var reports []report
	for _, p := range rt.Status.Parents {
		gw, isGateway := routeParentKey(p.ParentRef, rt.Namespace)
		if !isGateway {
			continue
		}
		r := report{gateway: gw}
		rr := freshCondition(p.Conditions, string(gatewayv1.RouteConditionResolvedRefs), rt.Generation)
		v1Accepted := v1Parents[gw]
		switch {
		case rr == nil && v1Accepted:
			r.why = fmt.Sprintf("gateway %s accepted the v1 InferencePool but has not reported ResolvedRefs for route generation %d", gw, rt.Generation)
		case rr == nil:
			r.why = fmt.Sprintf("gateway %s has not reported ResolvedRefs for route generation %d", gw, rt.Generation)
		case rr.Status == metav1.ConditionFalse && rr.Reason == string(gatewayv1.RouteReasonInvalidKind):
			if alpha2Rejected(rr.Message, hasV1, hasAlpha2, v1Accepted, alpha2Parents[gw]) {
				r.ok, r.kind = true, true
			} else {
				r.why = fmt.Sprintf("gateway %s rejects a backend kind (InvalidKind: %s) and has not accepted the v1 InferencePool", gw, rr.Message)
			}
		case rr.Status == metav1.ConditionUnknown:
			r.why = fmt.Sprintf("gateway %s reports ResolvedRefs Unknown", gw)
		case !hasV1:
			r.why = "the route has no v1 InferencePool backend yet"
		case !v1Accepted:
			r.why = fmt.Sprintf("gateway %s has not accepted the v1 InferencePool", gw)
		default:
			r.ok = true
		}
		reports = append(reports, r)
	}
	return reports
}

// summarize is the evidence of the gateways' reports: every one must show
// it routes to v1.
func summarize(reports []report) evidence {
	if len(reports) == 0 {
		return evidence{reason: ReasonAwaitingGateway, message: "no gateway has reported on the route yet"}
	}
	slices.SortFunc(reports, func(a, b report) int { return strings.Compare(a.gateway, b.gateway) })
	var waiting, gateways, rejecting []string
	for _, r := range reports {
		switch {
		case !r.ok:
			waiting = append(waiting, r.why)
		case r.kind:
			rejecting = append(rejecting, r.gateway)
		default:
			gateways = append(gateways, r.gateway)
		}
	}
	gateways, rejecting = slices.Compact(gateways), slices.Compact(rejecting)
	if len(waiting) > 0 {
		return evidence{reason: ReasonAwaitingGateway, message: strings.Join(slices.Compact(waiting), "; ")}
	}
	if len(rejecting) > 0 {
		return evidence{moved: true, reason: ReasonAlpha2InvalidKind,
			message: fmt.Sprintf("gateway %s rejects the v1alpha2 InferencePool backend with InvalidKind", strings.Join(rejecting, ", "))}
	}
	return evidence{moved: true, reason: ReasonGatewayAcceptsV1,
		message: fmt.Sprintf("gateway %s accepts the v1 InferencePool and resolves the route", strings.Join(gateways, ", "))}
}

// alpha2Rejected says whether a route's InvalidKind is about its v1alpha2
// backend. The condition is one per gateway for the whole route, so with
// both backends present it takes another sign: the gateway accepted the v1
// pool (so it knows that kind), or the message names only the v1alpha2
// group. A gateway that accepted the v1alpha2 pool knows that kind.
func alpha2Rejected(message string, hasV1, hasAlpha2, v1Accepted, alpha2Accepted bool) bool {
	switch {
	case !hasAlpha2:
		return false
	case v1Accepted:
		return true
	case alpha2Accepted:
		return false
	case !hasV1:
		return true
	}
	return strings.Contains(message, build.GroupPoolV1alpha2) && !strings.Contains(message, build.GroupPoolV1)
}

// poolBackends says in which groups the route sends to the pool named
// pool ("": any InferencePool).
func poolBackends(route *gatewayv1.HTTPRoute, pool string) (v1, alpha2 bool) {
	for _, rule := range route.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			switch backendGroup(ref, route.Namespace, pool) {
			case build.GroupPoolV1:
				v1 = true
			case build.GroupPoolV1alpha2:
				alpha2 = true
			}
		}
	}
	return v1, alpha2
}

// backendGroup is the API group of ref when it names the InferencePool
// pool ("": any) in the route's namespace, or "".
func backendGroup(ref gatewayv1.HTTPBackendRef, routeNamespace, pool string) string {
	switch {
	case ref.Kind == nil || *ref.Kind != "InferencePool" || ref.Group == nil:
		return ""
	case pool != "" && string(ref.Name) != pool:
		return ""
	case ref.Namespace != nil && *ref.Namespace != "" && string(*ref.Namespace) != routeNamespace:
		return ""
	}
	return string(*ref.Group)
}

// routeParentKey is namespace/name of a Gateway parent; other parents are
// not gateways and do not count.
func routeParentKey(ref gatewayv1.ParentReference, routeNamespace string) (string, bool) {
	if ref.Group != nil && *ref.Group != "" && *ref.Group != gatewayv1.GroupName {
		return "", false
	}
	if ref.Kind != nil && *ref.Kind != "" && *ref.Kind != "Gateway" {
		return "", false
	}
	ns := routeNamespace
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	return ns + "/" + string(ref.Name), true
}

// v1PoolParents is the set of gateways that accepted the v1 pool, by
// namespace/name, from conditions as new as the pool's generation.
func v1PoolParents(pool *gieapiv1.InferencePool) map[string]bool {
	out := map[string]bool{}
	if pool == nil {
		return out
	}
	for _, p := range pool.Status.Parents {
		if p.ParentRef.Group != nil && *p.ParentRef.Group != "" && string(*p.ParentRef.Group) != gatewayv1.GroupName {
			continue
		}
		if p.ParentRef.Kind != "" && p.ParentRef.Kind != "Gateway" {
			continue
		}
		if accepted(p.Conditions, pool.Generation) {
			out[namespaced(string(p.ParentRef.Namespace), pool.Namespace, string(p.ParentRef.Name))] = true
		}
	}
	return out
}

// alpha2PoolParents is v1PoolParents for the v1alpha2 pool, whose status
// is under status.parent.
func alpha2PoolParents(u *unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	if u == nil {
		return out
	}
	var pool gieapixv1alpha2.InferencePool
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pool); err != nil {
		return out // a malformed status is no evidence
	}
	for _, p := range pool.Status.Parents {
		ref := p.GatewayRef
		if ref.Group != nil && *ref.Group != "" && string(*ref.Group) != gatewayv1.GroupName {
			continue
		}
		if ref.Kind != nil && *ref.Kind != "" && *ref.Kind != "Gateway" {
			continue
		}
		if accepted(p.Conditions, pool.Generation) {
			ns := ""
			if ref.Namespace != nil {
				ns = string(*ref.Namespace)
			}
			out[namespaced(ns, pool.Namespace, string(ref.Name))] = true
		}
	}
	return out
}

func namespaced(ns, fallback, name string) string {
	if ns == "" {
		ns = fallback
	}
	return ns + "/" + name
}

func accepted(conds []metav1.Condition, generation int64) bool {
	c := freshCondition(conds, "Accepted", generation)
	return c != nil && c.Status == metav1.ConditionTrue
}

// freshCondition finds a condition that describes the object's current
// generation; an older one is stale and ignored.
func freshCondition(conds []metav1.Condition, kind string, generation int64) *metav1.Condition {
	c := meta.FindStatusCondition(conds, kind)
	if c == nil || c.ObservedGeneration < generation {
		return nil
	}
	return c
}

// Unfinished reports whether a service whose recorded phase is this still
// needs the v1alpha2 InferencePool API: every phase before retired, and no
// phase yet. The CRD lifecycle keeps the v1alpha2 CRD up to date while any
// service is unfinished.
func Unfinished(phase string) bool {
	return phase != string(convention.PhaseRetired)
}
