package simdataplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func (d *DataPlane) setupRoutes() error {
	b := builder.ControllerManagedBy(d.mgr).Named("simulated-httproutes").
		For(&gatewayv1.HTTPRoute{}).
		Watches(&gatewayv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(d.routesOfGateway)).
		// Backends appearing or going resolve or break the routes beside them.
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(d.routesInNamespace))
	if d.served[gkPoolV1] {
		b = b.Watches(&gieapiv1.InferencePool{}, handler.EnqueueRequestsFromMapFunc(d.routesInNamespace))
	}
	if d.served[gkPoolAlpha2] {
		b = b.Watches(&gieapixv1alpha2.InferencePool{}, handler.EnqueueRequestsFromMapFunc(d.routesInNamespace))
	}
	return b.Complete(reconcile.Func(d.reconcileRoute))
}

// reconcileRoute writes one parent status per Gateway the route names:
// Accepted when a listener admits it, ResolvedRefs when its backends exist.
// Parent statuses of other controllers stay.
func (d *DataPlane) reconcileRoute(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	route := &gatewayv1.HTTPRoute{}
	if err := d.client().Get(ctx, req.NamespacedName, route); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	resolved, reason, message, err := d.resolveBackends(ctx, route)
	if err != nil {
		return reconcile.Result{}, err
	}
	var parents []gatewayv1.RouteParentStatus
	for _, p := range route.Status.Parents {
		if p.ControllerName != gatewayv1.GatewayController(d.opts.ControllerName) {
			parents = append(parents, p)
		}
	}
	var summary []string
	for _, ref := range route.Spec.ParentRefs {
		key, ok := gatewayKey(ref, route.Namespace)
		if !ok {
			continue
		}
		gw := &gatewayv1.Gateway{}
		if found, err := d.exists(ctx, gw, key.Namespace, key.Name); err != nil || !found {
			if err != nil {
				return reconcile.Result{}, fmt.Errorf("HTTPRoute %s: read Gateway %s: %w", req.NamespacedName, key, err)
			}
			continue // no gateway, no controller to report
		}
		listeners, err := d.admittingListeners(ctx, gw, route, ref)
		if err != nil {
			return reconcile.Result{}, err
		}
		conds := slices.Clone(d.ownParentConditions(route, ref))
		if len(listeners) > 0 {
			meta.SetStatusCondition(&conds, trueCondition(string(gatewayv1.RouteConditionAccepted), string(gatewayv1.RouteReasonAccepted),
				"accepted by the simulated gateway", route.Generation))
		} else {
			meta.SetStatusCondition(&conds, metav1.Condition{
				Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionFalse, ObservedGeneration: route.Generation,
				Reason:  string(gatewayv1.RouteReasonNotAllowedByListeners),
				Message: fmt.Sprintf("no listener of Gateway %s admits HTTPRoutes from namespace %s", key, route.Namespace),
			})
		}
		rr := metav1.Condition{Type: string(gatewayv1.RouteConditionResolvedRefs), Status: metav1.ConditionTrue, ObservedGeneration: route.Generation,
			Reason: string(gatewayv1.RouteReasonResolvedRefs), Message: "every backend exists (simulated)"}
		if !resolved {
			rr.Status, rr.Reason, rr.Message = metav1.ConditionFalse, reason, message
		}
		meta.SetStatusCondition(&conds, rr)
		parents = append(parents, gatewayv1.RouteParentStatus{ParentRef: ref, ControllerName: gatewayv1.GatewayController(d.opts.ControllerName), Conditions: conds})
		summary = append(summary, fmt.Sprintf("%s: Accepted=%t ResolvedRefs=%s", key, len(listeners) > 0, rr.Status))
	}
	if wrote, err := writeStatus(ctx, d, route, &route.Status.Parents, parents, "report HTTPRoute "+req.String()); err != nil || !wrote {
		return reconcile.Result{}, err
	}
	d.logf("HTTPRoute %s (generation %d): %s", req.NamespacedName, route.Generation, strings.Join(summary, "; "))
	return reconcile.Result{}, nil
}

// ownParentConditions returns the conditions this simulator wrote before for
// ref, so unchanged conditions keep their lastTransitionTime.
func (d *DataPlane) ownParentConditions(route *gatewayv1.HTTPRoute, ref gatewayv1.ParentReference) []metav1.Condition {
	for _, p := range route.Status.Parents {
		if p.ControllerName == gatewayv1.GatewayController(d.opts.ControllerName) && equality.Semantic.DeepEqual(p.ParentRef, ref) {
			return p.Conditions
		}
	}
	return nil
}

// resolveBackends checks every backend of the route: a Service or an
// InferencePool of either group in the route's namespace that exists. The
// simulator reads no ReferenceGrants, so another namespace is refused.
func (d *DataPlane) resolveBackends(ctx context.Context, route *gatewayv1.HTTPRoute) (ok bool, reason, message string, err error) {
	for _, rule := range route.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			name := string(ref.Name)
			if ref.Namespace != nil && string(*ref.Namespace) != route.Namespace {
				return false, string(gatewayv1.RouteReasonRefNotPermitted),
					fmt.Sprintf("backend %s/%s: the simulated gateway reads no ReferenceGrants", *ref.Namespace, name), nil
			}
			group, kind := "", "Service"
			if ref.Group != nil {
				group = string(*ref.Group)
			}
			if ref.Kind != nil {
				kind = string(*ref.Kind)
			}
			var obj client.Object
			switch {
			case group == "" && kind == "Service":
				obj = &corev1.Service{}
			case group == gkPoolV1.Group && kind == gkPoolV1.Kind && d.served[gkPoolV1]:
				obj = &gieapiv1.InferencePool{}
			case group == gkPoolAlpha2.Group && kind == gkPoolAlpha2.Kind && d.served[gkPoolAlpha2]:
				obj = &gieapixv1alpha2.InferencePool{}
			default:
				return false, string(gatewayv1.RouteReasonInvalidKind),
					fmt.Sprintf("backend %s: kind %s in group %q is not supported", name, kind, group), nil
			}
			found, err := d.exists(ctx, obj, route.Namespace, name)
			if err != nil {
				return false, "", "", fmt.Errorf("HTTPRoute %s/%s: read backend %s %s: %w", route.Namespace, route.Name, kind, name, err)
			}
			if !found {
				return false, string(gatewayv1.RouteReasonBackendNotFound),
					fmt.Sprintf("backend %s %s.%s not found", kind, name, group), nil
			}
		}
	}
	return true, "", "", nil
}

// routesOfGateway maps a Gateway to the routes that name it.
func (d *DataPlane) routesOfGateway(ctx context.Context, obj client.Object) []reconcile.Request {
	gw, ok := obj.(*gatewayv1.Gateway)
	if !ok {
		return nil
	}
	routes := &gatewayv1.HTTPRouteList{}
	if err := d.client().List(ctx, routes); err != nil {
		d.logf("list HTTPRoutes for Gateway %s/%s: %v", gw.Namespace, gw.Name, err)
		return nil
	}
	var out []reconcile.Request
	for i := range routes.Items {
		route := &routes.Items[i]
		if slices.ContainsFunc(route.Spec.ParentRefs, func(ref gatewayv1.ParentReference) bool { return refersTo(ref, route.Namespace, gw) }) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(route)})
		}
	}
	return out
}

// routesInNamespace maps a backend to every route in its namespace.
func (d *DataPlane) routesInNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	routes := &gatewayv1.HTTPRouteList{}
	if err := d.client().List(ctx, routes, client.InNamespace(obj.GetNamespace())); err != nil {
		d.logf("list HTTPRoutes in %s: %v", obj.GetNamespace(), err)
		return nil
	}
	out := make([]reconcile.Request, 0, len(routes.Items))
	for i := range routes.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&routes.Items[i])})
	}
	return out
}
