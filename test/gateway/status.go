package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ControllerName is the gateway controller the test gateway names in the
// parent statuses it writes; other controllers' statuses stay.
const ControllerName = "odh-serving.opendatahub.io/test-gateway"

// status writes what the router observes into the status of
// GatewayClasses, HTTPRoutes and InferencePools.
type status struct {
	router *Router
	c      client.Client
}

var (
	gkPoolV1     = schema.GroupKind{Group: gieapiv1.GroupVersion.Group, Kind: "InferencePool"}
	gkPoolAlpha2 = schema.GroupKind{Group: gieapixv1alpha2.GroupVersion.Group, Kind: "InferencePool"}
)

// NewStatus sets up, on the manager, the controllers that report what the
// test gateway observes, as a gateway implementation does:
//
//   - every GatewayClass Accepted (the test gateway serves every Gateway,
//     whatever its class);
//   - on each HTTPRoute, one parent status per Gateway it names: Accepted
//     when a listener takes it (section, port, protocol, allowed kinds and
//     namespaces), else NotAllowedByListeners; ResolvedRefs when every
//     backend is one the router can use, else the first one's reason
//     (InvalidKind, BackendNotFound, RefNotPermitted) and message;
//   - on each InferencePool of a group a Gateway routes to
//     (PoolGroupsAnnotation), one parent per Gateway that has accepted a
//     route sending to it: Accepted, and ResolvedRefs when the endpoint
//     picker's Service exists.
//
// Every condition carries the observedGeneration of its object. A kind the
// cluster does not serve (an InferencePool group) is left out.
func NewStatus(mgr manager.Manager, router *Router) error {
	s := &status{router: router, c: mgr.GetClient()}
	served := map[schema.GroupKind]bool{}
	for _, gk := range []schema.GroupKind{gkPoolV1, gkPoolAlpha2} {
		_, err := mgr.GetRESTMapper().RESTMapping(gk)
		switch {
		case err == nil:
			served[gk] = true
		case !meta.IsNoMatchError(err):
			return fmt.Errorf("test gateway: look up %s: %w", gk, err)
		}
	}
	opts := controller.Options{SkipNameValidation: ptr.To(true)}
	if err := builder.ControllerManagedBy(mgr).Named("test-gateway-classes").WithOptions(opts).
		For(&gatewayv1.GatewayClass{}).
		Complete(reconcile.Func(s.reconcileClass)); err != nil {
		return fmt.Errorf("test gateway: %w", err)
	}
	routes := builder.ControllerManagedBy(mgr).Named("test-gateway-routes").WithOptions(opts).
		For(&gatewayv1.HTTPRoute{}).
		Watches(&gatewayv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(s.allRoutes)).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(s.routesInNamespace))
	if served[gkPoolV1] {
		routes = routes.Watches(&gieapiv1.InferencePool{}, handler.EnqueueRequestsFromMapFunc(s.routesInNamespace))
	}
	if served[gkPoolAlpha2] {
		routes = routes.Watches(&gieapixv1alpha2.InferencePool{}, handler.EnqueueRequestsFromMapFunc(s.routesInNamespace))
	}
	if err := routes.Complete(reconcile.Func(s.reconcileRoute)); err != nil {
		return fmt.Errorf("test gateway: %w", err)
	}
	for _, p := range []struct {
		gk        schema.GroupKind
		obj       client.Object
		list      client.ObjectList
		reconcile reconcile.Func
	}{
		{gkPoolV1, &gieapiv1.InferencePool{}, &gieapiv1.InferencePoolList{}, s.reconcilePoolV1},
		{gkPoolAlpha2, &gieapixv1alpha2.InferencePool{}, &gieapixv1alpha2.InferencePoolList{}, s.reconcilePoolAlpha2},
	} {
		if !served[p.gk] {
			continue
		}
		group, list := p.gk.Group, p.list
		err := builder.ControllerManagedBy(mgr).Named("test-gateway-pools-"+strings.ReplaceAll(group, ".", "-")).WithOptions(opts).
			For(p.obj).
			Watches(&gatewayv1.HTTPRoute{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
				return poolsOfRoute(obj, group)
			})).
			Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
				return s.requests(ctx, list, client.InNamespace(obj.GetNamespace()))
			})).
			Watches(&gatewayv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
				return s.requests(ctx, list)
			})).
			Complete(p.reconcile)
		if err != nil {
			return fmt.Errorf("test gateway: %w", err)
		}
	}
	return nil
}

// writeStatus sets *field, a part of obj's status, to next and writes it;
// nothing when it holds next already (no write in steady state).
func writeStatus[S any](ctx context.Context, c client.Client, obj client.Object, field *S, next S, what string) (bool, error) {
	if equality.Semantic.DeepEqual(*field, next) {
		return false, nil
	}
	*field = next
	if err := c.Status().Update(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
		return false, fmt.Errorf("test gateway: %s: %w", what, err)
	}
	return true, nil
}

func (s *status) reconcileClass(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	gc := &gatewayv1.GatewayClass{}
	if err := s.c.Get(ctx, req.NamespacedName, gc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	conds := slices.Clone(gc.Status.Conditions)
	setCondition(&conds, string(gatewayv1.GatewayClassConditionStatusAccepted), true, string(gatewayv1.GatewayClassReasonAccepted),
		"the test gateway serves every Gateway", gc.Generation)
	wrote, err := writeStatus(ctx, s.c, gc, &gc.Status.Conditions, conds, "accept GatewayClass "+gc.Name)
	if wrote {
		s.router.logf("GatewayClass %s Accepted", gc.Name)
	}
	return reconcile.Result{}, err
}

// gatewayOf is the Gateway a parent reference names; false for other
// parents (a Service of a mesh).
func gatewayOf(ref gatewayv1.ParentReference, routeNamespace string) (types.NamespacedName, bool) {
	if ref.Group != nil && *ref.Group != gatewayv1.GroupName || ref.Kind != nil && *ref.Kind != "Gateway" {
		return types.NamespacedName{}, false
	}
	ns := routeNamespace
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	return types.NamespacedName{Namespace: ns, Name: string(ref.Name)}, true
}

// accepted says whether a listener of gw takes rt through ref.
func (s *status) accepted(ctx context.Context, gw *gatewayv1.Gateway, rt *gatewayv1.HTTPRoute, ref gatewayv1.ParentReference) (bool, error) {
	for _, l := range gw.Spec.Listeners {
		ok, err := s.router.admits(ctx, gw, l, rt, ref)
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// gateway reads a Gateway; nil when it does not exist.
func (s *status) gateway(ctx context.Context, key types.NamespacedName) (*gatewayv1.Gateway, error) {
	gw := &gatewayv1.Gateway{}
	if err := s.c.Get(ctx, key, gw); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("read Gateway %s: %w", key, err)
	}
	return gw, nil
}

func (s *status) reconcileRoute(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rt := &gatewayv1.HTTPRoute{}
	if err := s.c.Get(ctx, req.NamespacedName, rt); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var parents []gatewayv1.RouteParentStatus
	for _, p := range rt.Status.Parents {
		if p.ControllerName != ControllerName {
			parents = append(parents, p)
		}
	}
	var summary []string
	for _, ref := range rt.Spec.ParentRefs {
		key, ok := gatewayOf(ref, rt.Namespace)
		if !ok {
			continue
		}
		gw, err := s.gateway(ctx, key)
		if err != nil {
			return reconcile.Result{}, err
		}
		if gw == nil {
			continue // no Gateway: nothing of the test gateway's to report
		}
		var conds []metav1.Condition
		for _, p := range rt.Status.Parents {
			if p.ControllerName == ControllerName && equality.Semantic.DeepEqual(p.ParentRef, ref) {
				conds = slices.Clone(p.Conditions)
			}
		}
		ok, err = s.accepted(ctx, gw, rt, ref)
		if err != nil {
			return reconcile.Result{}, err
		}
		if ok {
			setCondition(&conds, string(gatewayv1.RouteConditionAccepted), true, string(gatewayv1.RouteReasonAccepted), "accepted by the test gateway", rt.Generation)
		} else {
			setCondition(&conds, string(gatewayv1.RouteConditionAccepted), false, string(gatewayv1.RouteReasonNotAllowedByListeners),
				fmt.Sprintf("no listener of Gateway %s takes this route from namespace %s", key, rt.Namespace), rt.Generation)
		}
		reason, msg := gatewayv1.RouteReasonResolvedRefs, "every backend resolved"
		for _, rule := range rt.Spec.Rules {
			bs, err := s.router.resolveBackends(ctx, gw, rt.Namespace, rule.BackendRefs)
			if err != nil {
				return reconcile.Result{}, fmt.Errorf("HTTPRoute %s: %w", req.NamespacedName, err)
			}
			if i := slices.IndexFunc(bs, func(b backend) bool { return b.reason != "" }); i >= 0 && reason == gatewayv1.RouteReasonResolvedRefs {
				reason, msg = bs[i].reason, bs[i].message
			}
		}
		setCondition(&conds, string(gatewayv1.RouteConditionResolvedRefs), reason == gatewayv1.RouteReasonResolvedRefs, string(reason), msg, rt.Generation)
		parents = append(parents, gatewayv1.RouteParentStatus{ParentRef: ref, ControllerName: ControllerName, Conditions: conds})
		summary = append(summary, fmt.Sprintf("%s: Accepted=%t ResolvedRefs=%s", key, ok, reason))
	}
	wrote, err := writeStatus(ctx, s.c, rt, &rt.Status.Parents, parents, "report HTTPRoute "+req.String())
	if wrote {
		s.router.logf("HTTPRoute %s (generation %d): %s", req.NamespacedName, rt.Generation, strings.Join(summary, "; "))
	}
	return reconcile.Result{}, err
}

// poolParent is a Gateway that routes to a pool, and whether the pool's
// endpoint picker Service exists.
type poolParent struct {
	gateway    types.NamespacedName
	eppFound   bool
	eppMessage string
}

func (p poolParent) conditions(prev []metav1.Condition, generation int64) []metav1.Condition {
	conds := slices.Clone(prev)
	setCondition(&conds, "Accepted", true, "Accepted", "a route accepted by the test gateway sends to this pool", generation)
	reason := "ResolvedRefs"
	if !p.eppFound {
		reason = "InvalidExtensionRef"
	}
	setCondition(&conds, "ResolvedRefs", p.eppFound, reason, p.eppMessage, generation)
	return conds
}

// poolParents lists, sorted, the Gateways serving the pool's group that
// have accepted a route in its namespace sending to it.
func (s *status) poolParents(ctx context.Context, namespace, group, name, eppGroup, eppKind, eppName string) ([]poolParent, error) {
	eppFound, eppMessage := false, ""
	if eppGroup != "" || eppKind != "" && eppKind != "Service" {
		eppMessage = fmt.Sprintf("endpoint picker kind %s in group %q is not supported", eppKind, eppGroup)
	} else {
		err := s.c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: eppName}, &corev1.Service{})
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("InferencePool %s/%s: read endpoint picker Service %s: %w", namespace, name, eppName, err)
		}
		eppFound = err == nil
		eppMessage = "endpoint picker Service " + eppName + " exists"
		if !eppFound {
			eppMessage = "endpoint picker Service " + eppName + " not found"
		}
	}
	routes := &gatewayv1.HTTPRouteList{}
	if err := s.c.List(ctx, routes, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("InferencePool %s/%s: list HTTPRoutes: %w", namespace, name, err)
	}
	self := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
	gateways := map[types.NamespacedName]bool{}
	for i := range routes.Items {
		rt := &routes.Items[i]
		if !slices.Contains(poolsOfRoute(rt, group), self) {
			continue
		}
		for _, ref := range rt.Spec.ParentRefs {
			key, ok := gatewayOf(ref, rt.Namespace)
			if !ok || gateways[key] {
				continue
			}
			gw, err := s.gateway(ctx, key)
			if err != nil {
				return nil, err
			}
			if gw == nil || !s.router.servesPools(gw, group) {
				continue
			}
			ok, err = s.accepted(ctx, gw, rt, ref)
			if err != nil {
				return nil, err
			}
			gateways[key] = ok
		}
	}
	var out []poolParent
	for gw, ok := range gateways {
		if ok {
			out = append(out, poolParent{gateway: gw, eppFound: eppFound, eppMessage: eppMessage})
		}
	}
	slices.SortFunc(out, func(a, b poolParent) int { return strings.Compare(a.gateway.String(), b.gateway.String()) })
	return out, nil
}

func (s *status) reconcilePoolV1(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pool := &gieapiv1.InferencePool{}
	if err := s.c.Get(ctx, req.NamespacedName, pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	epp := pool.Spec.EndpointPickerRef
	parents, err := s.poolParents(ctx, pool.Namespace, gkPoolV1.Group, pool.Name, string(ptr.Deref(epp.Group, "")), string(epp.Kind), string(epp.Name))
	if err != nil {
		return reconcile.Result{}, err
	}
	var next []gieapiv1.ParentStatus
	for _, p := range pool.Status.Parents {
		if p.ControllerName != ControllerName {
			next = append(next, p)
		}
	}
	for _, p := range parents {
		ref := gieapiv1.ParentReference{Group: ptr.To(gieapiv1.Group(gatewayv1.GroupName)), Kind: "Gateway",
			Name: gieapiv1.ObjectName(p.gateway.Name), Namespace: gieapiv1.Namespace(p.gateway.Namespace)}
		var prev []metav1.Condition
		for _, old := range pool.Status.Parents {
			if old.ControllerName == ControllerName && equality.Semantic.DeepEqual(old.ParentRef, ref) {
				prev = old.Conditions
			}
		}
		next = append(next, gieapiv1.ParentStatus{ParentRef: ref, ControllerName: ControllerName, Conditions: p.conditions(prev, pool.Generation)})
	}
	wrote, err := writeStatus(ctx, s.c, pool, &pool.Status.Parents, next, "report InferencePool "+req.String()+" ("+gkPoolV1.Group+")")
	if wrote {
		s.logPool(req.NamespacedName, gkPoolV1.Group, pool.Generation, parents)
	}
	return reconcile.Result{}, err
}

// reconcilePoolAlpha2 reports on a v1alpha2 pool, whose status names no
// controller: the test gateway owns all of it.
func (s *status) reconcilePoolAlpha2(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pool := &gieapixv1alpha2.InferencePool{}
	if err := s.c.Get(ctx, req.NamespacedName, pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ext := pool.Spec.ExtensionRef
	parents, err := s.poolParents(ctx, pool.Namespace, gkPoolAlpha2.Group, pool.Name, string(ptr.Deref(ext.Group, "")), string(ptr.Deref(ext.Kind, "")), string(ext.Name))
	if err != nil {
		return reconcile.Result{}, err
	}
	next := make([]gieapixv1alpha2.PoolStatus, 0, len(parents))
	for _, p := range parents {
		ref := gieapixv1alpha2.ParentGatewayReference{
			Group: ptr.To(gieapixv1alpha2.Group(gatewayv1.GroupName)), Kind: ptr.To(gieapixv1alpha2.Kind("Gateway")),
			Name: gieapixv1alpha2.ObjectName(p.gateway.Name), Namespace: ptr.To(gieapixv1alpha2.Namespace(p.gateway.Namespace)),
		}
		var prev []metav1.Condition
		for _, old := range pool.Status.Parents {
			if equality.Semantic.DeepEqual(old.GatewayRef, ref) {
				prev = old.Conditions
			}
		}
		next = append(next, gieapixv1alpha2.PoolStatus{GatewayRef: ref, Conditions: p.conditions(prev, pool.Generation)})
	}
	wrote, err := writeStatus(ctx, s.c, pool, &pool.Status.Parents, next, "report InferencePool "+req.String()+" ("+gkPoolAlpha2.Group+")")
	if wrote {
		s.logPool(req.NamespacedName, gkPoolAlpha2.Group, pool.Generation, parents)
	}
	return reconcile.Result{}, err
}

func (s *status) logPool(key types.NamespacedName, group string, generation int64, parents []poolParent) {
	if len(parents) == 0 {
		s.router.logf("InferencePool %s (%s, generation %d): no Gateway routes to it", key, group, generation)
		return
	}
	var parts []string
	for _, p := range parents {
		parts = append(parts, fmt.Sprintf("%s Accepted, ResolvedRefs=%t", p.gateway, p.eppFound))
	}
	s.router.logf("InferencePool %s (%s, generation %d): %s", key, group, generation, strings.Join(parts, "; "))
}

// poolsOfRoute names the pools of one group a route sends to.
func poolsOfRoute(obj client.Object, group string) []reconcile.Request {
	rt, ok := obj.(*gatewayv1.HTTPRoute)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, rule := range rt.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			if g, kind := groupKind(ref.BackendObjectReference); g != group || kind != "InferencePool" || ref.Namespace != nil && string(*ref.Namespace) != rt.Namespace {
				continue
			}
			r := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rt.Namespace, Name: string(ref.Name)}}
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// requests lists objects as reconcile requests.
func (s *status) requests(ctx context.Context, list client.ObjectList, opts ...client.ListOption) []reconcile.Request {
	list, ok := list.DeepCopyObject().(client.ObjectList)
	if !ok {
		return nil
	}
	if err := s.c.List(ctx, list, opts...); err != nil {
		s.router.logf("list %T: %v", list, err)
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(items))
	for _, it := range items {
		if obj, ok := it.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return out
}

func (s *status) allRoutes(ctx context.Context, _ client.Object) []reconcile.Request {
	return s.requests(ctx, &gatewayv1.HTTPRouteList{})
}

func (s *status) routesInNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	return s.requests(ctx, &gatewayv1.HTTPRouteList{}, client.InNamespace(obj.GetNamespace()))
}
