package simdataplane

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func (d *DataPlane) setupPoolsV1() error {
	return d.poolController("simulated-inferencepools-v1", &gieapiv1.InferencePool{}, &gieapiv1.InferencePoolList{}, gkPoolV1.Group).
		Complete(reconcile.Func(d.reconcilePoolV1))
}

func (d *DataPlane) setupPoolsAlpha2() error {
	return d.poolController("simulated-inferencepools-v1alpha2", &gieapixv1alpha2.InferencePool{}, &gieapixv1alpha2.InferencePoolList{}, gkPoolAlpha2.Group).
		Complete(reconcile.Func(d.reconcilePoolAlpha2))
}

// poolController watches what a pool's parents depend on: the routes that
// send to it, the endpoint picker's Service, the Gateways.
func (d *DataPlane) poolController(name string, pool client.Object, list client.ObjectList, group string) *builder.TypedBuilder[reconcile.Request] {
	inNamespace := func(ctx context.Context, obj client.Object) []reconcile.Request {
		return d.listRequests(ctx, list, client.InNamespace(obj.GetNamespace()))
	}
	return builder.ControllerManagedBy(d.mgr).Named(name).
		For(pool).
		Watches(&gatewayv1.HTTPRoute{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			return poolsOfRoute(obj, group)
		})).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(inNamespace)).
		Watches(&gatewayv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			return d.listRequests(ctx, list)
		}))
}

// reconcilePoolV1 reports the gateways that route to a v1 pool, once
// V1PoolDelay has passed since the simulator first saw it. Parent statuses
// of other controllers stay.
func (d *DataPlane) reconcilePoolV1(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pool := &gieapiv1.InferencePool{}
	if err := d.client().Get(ctx, req.NamespacedName, pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	seen, loaded := d.firstSeen.LoadOrStore(pool.UID, time.Now())
	if wait := time.Until(seen.(time.Time).Add(d.opts.V1PoolDelay)); wait > 0 {
		if !loaded {
			d.logf("InferencePool %s (%s): the simulated gateway accepts v1 pools %s after they appear", req.NamespacedName, gkPoolV1.Group, d.opts.V1PoolDelay)
		}
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	epp := pool.Spec.EndpointPickerRef
	parents, err := d.poolParents(ctx, pool.Namespace, gkPoolV1.Group, pool.Name, string(ptr.Deref(epp.Group, "")), string(epp.Kind), string(epp.Name), pool.Generation)
	if err != nil {
		return reconcile.Result{}, err
	}
	controller := gieapiv1.ControllerName(d.opts.ControllerName)
	var status []gieapiv1.ParentStatus
	for _, p := range pool.Status.Parents {
		if p.ControllerName != controller {
			status = append(status, p)
		}
	}
	for _, p := range parents {
		ref := gieapiv1.ParentReference{Group: ptr.To(gieapiv1.Group(gatewayv1.GroupName)), Kind: "Gateway",
			Name: gieapiv1.ObjectName(p.gateway.Name), Namespace: gieapiv1.Namespace(p.gateway.Namespace)}
		var prev []metav1.Condition
		for _, old := range pool.Status.Parents {
			if old.ControllerName == controller && equality.Semantic.DeepEqual(old.ParentRef, ref) {
				prev = old.Conditions
			}
		}
		status = append(status, gieapiv1.ParentStatus{ParentRef: ref, ControllerName: controller, Conditions: p.conditions(prev)})
	}
	if wrote, err := writeStatus(ctx, d, pool, &pool.Status.Parents, status, "report InferencePool "+req.String()+" ("+gkPoolV1.Group+")"); err != nil || !wrote {
		return reconcile.Result{}, err
	}
	d.logPool(req.NamespacedName, gkPoolV1.Group, pool.Generation, parents)
	return reconcile.Result{}, nil
}

// reconcilePoolAlpha2 reports the gateways that route to a v1alpha2 pool.
// Its status has no controller name, so the simulator owns all of it.
func (d *DataPlane) reconcilePoolAlpha2(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pool := &gieapixv1alpha2.InferencePool{}
	if err := d.client().Get(ctx, req.NamespacedName, pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ext := pool.Spec.ExtensionRef
	parents, err := d.poolParents(ctx, pool.Namespace, gkPoolAlpha2.Group, pool.Name,
		string(ptr.Deref(ext.Group, "")), string(ptr.Deref(ext.Kind, "")), string(ext.Name), pool.Generation)
	if err != nil {
		return reconcile.Result{}, err
	}
	status := make([]gieapixv1alpha2.PoolStatus, 0, len(parents))
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
		status = append(status, gieapixv1alpha2.PoolStatus{GatewayRef: ref, Conditions: p.conditions(prev)})
	}
	// writeStatus's semantic equality takes an empty list for no parents
	// (nil): a pool no gateway routes to is not written again.
	if wrote, err := writeStatus(ctx, d, pool, &pool.Status.Parents, status, "report InferencePool "+req.String()+" ("+gkPoolAlpha2.Group+")"); err != nil || !wrote {
		return reconcile.Result{}, err
	}
	d.logPool(req.NamespacedName, gkPoolAlpha2.Group, pool.Generation, parents)
	return reconcile.Result{}, nil
}

func (d *DataPlane) logPool(key types.NamespacedName, group string, generation int64, parents []poolParent) {
	if len(parents) == 0 {
		d.logf("InferencePool %s (%s, generation %d): no gateway routes to it", key, group, generation)
		return
	}
	var parts []string
	for _, p := range parents {
		parts = append(parts, fmt.Sprintf("%s Accepted, ResolvedRefs=%t", p.gateway, p.eppFound))
	}
	d.logf("InferencePool %s (%s, generation %d): %s", key, group, generation, strings.Join(parts, "; "))
}

// poolParent is one gateway that routes to a pool.
type poolParent struct {
	gateway    types.NamespacedName
	eppFound   bool
	eppMessage string
	generation int64
}

func (p poolParent) conditions(prev []metav1.Condition) []metav1.Condition {
	conds := slices.Clone(prev)
	meta.SetStatusCondition(&conds, trueCondition("Accepted", "Accepted", "accepted by the simulated gateway", p.generation))
	rr := trueCondition("ResolvedRefs", "ResolvedRefs", p.eppMessage, p.generation)
	if !p.eppFound {
		rr.Status, rr.Reason = metav1.ConditionFalse, "InvalidExtensionRef"
	}
	meta.SetStatusCondition(&conds, rr)
	return conds
}

// poolParents lists, sorted, the Gateways that admit a route in the pool's
// namespace sending to the pool, and whether the endpoint picker's Service
// exists.
func (d *DataPlane) poolParents(ctx context.Context, namespace, group, name, eppGroup, eppKind, eppName string, generation int64) ([]poolParent, error) {
	eppFound, eppMessage := false, ""
	switch {
	case eppGroup != "" || (eppKind != "" && eppKind != "Service"):
		eppMessage = fmt.Sprintf("endpoint picker kind %s in group %q is not supported", eppKind, eppGroup)
	default:
		found, err := d.serviceExists(ctx, namespace, eppName)
		if err != nil {
			return nil, fmt.Errorf("InferencePool %s/%s: read endpoint picker Service %s: %w", namespace, name, eppName, err)
		}
		eppFound = found
		eppMessage = fmt.Sprintf("endpoint picker Service %s exists (simulated: nothing serves it)", eppName)
		if !found {
			eppMessage = fmt.Sprintf("endpoint picker Service %s not found", eppName)
		}
	}
	routes := &gatewayv1.HTTPRouteList{}
	if err := d.client().List(ctx, routes, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("InferencePool %s/%s: list HTTPRoutes: %w", namespace, name, err)
	}
	gateways := map[types.NamespacedName]bool{}
	for i := range routes.Items {
		route := &routes.Items[i]
		if !slices.Contains(poolsOfRoute(route, group), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}) {
			continue
		}
		for _, ref := range route.Spec.ParentRefs {
			key, ok := gatewayKey(ref, route.Namespace)
			if !ok {
				continue
			}
			gw := &gatewayv1.Gateway{}
			found, err := d.exists(ctx, gw, key.Namespace, key.Name)
			if err != nil {
				return nil, fmt.Errorf("InferencePool %s/%s: read Gateway %s: %w", namespace, name, key, err)
			}
			if !found {
				continue
			}
			listeners, err := d.admittingListeners(ctx, gw, route, ref)
			if err != nil {
				return nil, err
			}
			if len(listeners) > 0 {
				gateways[key] = true
			}
		}
	}
	out := make([]poolParent, 0, len(gateways))
	for gw := range gateways {
		out = append(out, poolParent{gateway: gw, eppFound: eppFound, eppMessage: eppMessage, generation: generation})
	}
	slices.SortFunc(out, func(a, b poolParent) int { return strings.Compare(a.gateway.String(), b.gateway.String()) })
	return out, nil
}

// poolsOfRoute names the pools of one group a route sends to.
func poolsOfRoute(obj client.Object, group string) []reconcile.Request {
	route, ok := obj.(*gatewayv1.HTTPRoute)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, rule := range route.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			if ref.Group == nil || string(*ref.Group) != group || ref.Kind == nil || *ref.Kind != "InferencePool" {
				continue
			}
			if ref.Namespace != nil && string(*ref.Namespace) != route.Namespace {
				continue
			}
			r := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: route.Namespace, Name: string(ref.Name)}}
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// listRequests turns a list of pools into requests.
func (d *DataPlane) listRequests(ctx context.Context, list client.ObjectList, opts ...client.ListOption) []reconcile.Request {
	list, ok := list.DeepCopyObject().(client.ObjectList)
	if !ok {
		return nil
	}
	if err := d.client().List(ctx, list, opts...); err != nil {
		d.logf("list InferencePools: %v", err)
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
