package simdataplane

import (
	"context"
	"fmt"
	"net"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func (d *DataPlane) setupGatewayClasses() error {
	return builder.ControllerManagedBy(d.mgr).Named("simulated-gatewayclasses").
		For(&gatewayv1.GatewayClass{}).
		Complete(reconcile.Func(d.reconcileGatewayClass))
}

// reconcileGatewayClass accepts every GatewayClass: the simulator plays
// whichever gateway implementation the chart names.
func (d *DataPlane) reconcileGatewayClass(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	gc := &gatewayv1.GatewayClass{}
	if err := d.client().Get(ctx, req.NamespacedName, gc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	conds := slices.Clone(gc.Status.Conditions)
	meta.SetStatusCondition(&conds, trueCondition(string(gatewayv1.GatewayClassConditionStatusAccepted), string(gatewayv1.GatewayClassReasonAccepted),
		"accepted by the simulated gateway controller", gc.Generation))
	if wrote, err := writeStatus(ctx, d, gc, &gc.Status.Conditions, conds, "accept GatewayClass "+gc.Name); err != nil || !wrote {
		return reconcile.Result{}, err
	}
	d.logf("GatewayClass %s Accepted (controller %s)", gc.Name, gc.Spec.ControllerName)
	return reconcile.Result{}, nil
}

func (d *DataPlane) setupGateways() error {
	return builder.ControllerManagedBy(d.mgr).Named("simulated-gateways").
		For(&gatewayv1.Gateway{}).
		// attachedRoutes counts the routes.
		Watches(&gatewayv1.HTTPRoute{}, handler.EnqueueRequestsFromMapFunc(d.routeParents)).
		Complete(reconcile.Func(d.reconcileGateway))
}

// reconcileGateway programs every Gateway: an address, Accepted and
// Programmed, and each listener's status with its attached routes.
func (d *DataPlane) reconcileGateway(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	gw := &gatewayv1.Gateway{}
	if err := d.client().Get(ctx, req.NamespacedName, gw); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	routes := &gatewayv1.HTTPRouteList{}
	if err := d.client().List(ctx, routes); err != nil {
		return reconcile.Result{}, fmt.Errorf("list HTTPRoutes for Gateway %s: %w", req.NamespacedName, err)
	}
	attached := map[gatewayv1.SectionName]int32{}
	for i := range routes.Items {
		route := &routes.Items[i]
		for _, ref := range route.Spec.ParentRefs {
			if !refersTo(ref, route.Namespace, gw) {
				continue
			}
			names, err := d.admittingListeners(ctx, gw, route, ref)
			if err != nil {
				return reconcile.Result{}, err
			}
			for _, n := range names {
				attached[n]++
			}
		}
	}

	status := gw.Status.DeepCopy()
	addrType := gatewayv1.HostnameAddressType
	if net.ParseIP(d.opts.GatewayAddress) != nil {
		addrType = gatewayv1.IPAddressType
	}
	status.Addresses = []gatewayv1.GatewayStatusAddress{{Type: &addrType, Value: d.opts.GatewayAddress}}
	meta.SetStatusCondition(&status.Conditions, trueCondition(string(gatewayv1.GatewayConditionAccepted), string(gatewayv1.GatewayReasonAccepted),
		"accepted by the simulated gateway controller", gw.Generation))
	meta.SetStatusCondition(&status.Conditions, trueCondition(string(gatewayv1.GatewayConditionProgrammed), string(gatewayv1.GatewayReasonProgrammed),
		"programmed by the simulated gateway controller: no proxy runs, the address serves nothing", gw.Generation))
	listeners := make([]gatewayv1.ListenerStatus, 0, len(gw.Spec.Listeners))
	for _, l := range gw.Spec.Listeners {
		var conds []metav1.Condition
		if i := slices.IndexFunc(status.Listeners, func(s gatewayv1.ListenerStatus) bool { return s.Name == l.Name }); i >= 0 {
			conds = status.Listeners[i].Conditions
		}
		ls := gatewayv1.ListenerStatus{Name: l.Name, SupportedKinds: []gatewayv1.RouteGroupKind{}, AttachedRoutes: attached[l.Name], Conditions: slices.Clone(conds)}
		if httpListener(l) {
			group := gatewayv1.Group(gatewayv1.GroupName)
			ls.SupportedKinds = []gatewayv1.RouteGroupKind{{Group: &group, Kind: "HTTPRoute"}}
			for _, c := range []struct{ kind, reason string }{
				{string(gatewayv1.ListenerConditionAccepted), string(gatewayv1.ListenerReasonAccepted)},
				{string(gatewayv1.ListenerConditionProgrammed), string(gatewayv1.ListenerReasonProgrammed)},
				{string(gatewayv1.ListenerConditionResolvedRefs), string(gatewayv1.ListenerReasonResolvedRefs)},
			} {
				meta.SetStatusCondition(&ls.Conditions, trueCondition(c.kind, c.reason, "simulated", gw.Generation))
			}
		} else {
			meta.SetStatusCondition(&ls.Conditions, metav1.Condition{
				Type: string(gatewayv1.ListenerConditionAccepted), Status: metav1.ConditionFalse, ObservedGeneration: gw.Generation,
				Reason:  string(gatewayv1.ListenerReasonUnsupportedProtocol),
				Message: fmt.Sprintf("the simulated gateway serves HTTPRoutes only, not protocol %s", l.Protocol),
			})
		}
		listeners = append(listeners, ls)
	}
	status.Listeners = listeners
	wasProgrammed := meta.IsStatusConditionTrue(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed))
	if wrote, err := writeStatus(ctx, d, gw, &gw.Status, *status, "program Gateway "+req.String()); err != nil || !wrote {
		return reconcile.Result{}, err
	}
	if !wasProgrammed {
		d.logf("Gateway %s Programmed at %s (generation %d)", req.NamespacedName, d.opts.GatewayAddress, gw.Generation)
	}
	return reconcile.Result{}, nil
}

func httpListener(l gatewayv1.Listener) bool {
	return l.Protocol == gatewayv1.HTTPProtocolType || l.Protocol == gatewayv1.HTTPSProtocolType
}

// admittingListeners names the listeners of gw that take route through the
// parent reference ref: the section and port match, the listener serves
// HTTP(S) and allows HTTPRoutes from the route's namespace.
func (d *DataPlane) admittingListeners(ctx context.Context, gw *gatewayv1.Gateway, route *gatewayv1.HTTPRoute, ref gatewayv1.ParentReference) ([]gatewayv1.SectionName, error) {
	var out []gatewayv1.SectionName
	for _, l := range gw.Spec.Listeners {
		if ref.SectionName != nil && *ref.SectionName != l.Name {
			continue
		}
		if ref.Port != nil && *ref.Port != l.Port {
			continue
		}
		if !httpListener(l) || !allowsHTTPRoute(l.AllowedRoutes) {
			continue
		}
		ok, err := d.namespaceAllowed(ctx, l.AllowedRoutes, gw.Namespace, route.Namespace)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, l.Name)
		}
	}
	return out, nil
}

func allowsHTTPRoute(ar *gatewayv1.AllowedRoutes) bool {
	if ar == nil || len(ar.Kinds) == 0 {
		return true
	}
	return slices.ContainsFunc(ar.Kinds, func(k gatewayv1.RouteGroupKind) bool {
		return k.Kind == "HTTPRoute" && (k.Group == nil || *k.Group == gatewayv1.GroupName)
	})
}

// namespaceAllowed applies a listener's allowedRoutes.namespaces (default:
// the Gateway's own namespace).
func (d *DataPlane) namespaceAllowed(ctx context.Context, ar *gatewayv1.AllowedRoutes, gwNamespace, routeNamespace string) (bool, error) {
	from := gatewayv1.NamespacesFromSame
	var sel *metav1.LabelSelector
	if ar != nil && ar.Namespaces != nil {
		if ar.Namespaces.From != nil {
			from = *ar.Namespaces.From
		}
		sel = ar.Namespaces.Selector
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true, nil
	case gatewayv1.NamespacesFromSame:
		return gwNamespace == routeNamespace, nil
	case gatewayv1.NamespacesFromSelector:
		if sel == nil {
			return false, nil
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return false, nil //nolint:nilerr // an invalid selector admits nothing, as in a real gateway
		}
		ns := &corev1.Namespace{}
		if err := d.client().Get(ctx, types.NamespacedName{Name: routeNamespace}, ns); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return s.Matches(labels.Set(ns.Labels)), nil
	}
	return false, nil
}

// refersTo says whether a route's parent reference names gw.
func refersTo(ref gatewayv1.ParentReference, routeNamespace string, gw *gatewayv1.Gateway) bool {
	key, ok := gatewayKey(ref, routeNamespace)
	return ok && key == types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
}

// gatewayKey is the Gateway a parent reference names; other parents (a
// Service for GAMMA meshes) are not the simulator's.
func gatewayKey(ref gatewayv1.ParentReference, routeNamespace string) (types.NamespacedName, bool) {
	if ref.Group != nil && *ref.Group != gatewayv1.GroupName {
		return types.NamespacedName{}, false
	}
	if ref.Kind != nil && *ref.Kind != "Gateway" {
		return types.NamespacedName{}, false
	}
	ns := routeNamespace
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	return types.NamespacedName{Namespace: ns, Name: string(ref.Name)}, true
}

// routeParents maps a route to the Gateways it names.
func (d *DataPlane) routeParents(_ context.Context, obj client.Object) []reconcile.Request {
	route, ok := obj.(*gatewayv1.HTTPRoute)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, ref := range route.Spec.ParentRefs {
		if key, ok := gatewayKey(ref, route.Namespace); ok {
			out = append(out, reconcile.Request{NamespacedName: key})
		}
	}
	return out
}

func trueCondition(kind, reason, message string, generation int64) metav1.Condition {
	return metav1.Condition{Type: kind, Status: metav1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: generation}
}
