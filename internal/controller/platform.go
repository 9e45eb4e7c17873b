package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// monitoring reports whether services get monitors now.
func (r *Reconciler) monitoring() bool {
	return r.opts.monitoring() && r.kinds.hasCRD(crdPodMonitor) && r.kinds.hasCRD(crdServiceMonitor)
}

// gatewayTLS decides, from the classes of the gateways the service's
// routes attach to, what tells them to originate TLS: Istio
// DestinationRules when any is Istio's (as ODH's KServe decides), else
// BackendTLSPolicies when any is of an implementation known to read them
// (convention.BackendTLSPolicyGatewayControllers), each only while its CRD
// is served. Istio's shadow Service of the pool is looked up for Istio.
// The Istio gateways found are kept in p.istioGateways: publishCA puts the
// CA bundle in their namespaces, and nowhere else a route names.
func (r *Reconciler) gatewayTLS(ctx context.Context, p *pass) (convention.GatewayTLS, string, error) {
	if r.opts.StaticMode || !r.kinds.hasCRD(crdGateway) {
		return convention.GatewayTLSNone, "", nil
	}
	parents, err := r.routeParents(ctx, p)
	if err != nil || len(parents) == 0 {
		return convention.GatewayTLSNone, "", err
	}
	istio, btp := false, false
	for _, key := range parents {
		gw := &gatewayv1.Gateway{}
		ok, err := r.getOptional(ctx, key, gw)
		if err != nil {
			// A Gateway the cache does not reach (outside the watched
			// namespaces) says nothing; the route's status tells of it.
			ctrl.LoggerFrom(ctx).V(1).Info("a route's gateway cannot be read; no TLS for it", "gateway", key, "reason", err.Error())
			continue
		}
		if !ok {
			continue
		}
		if !r.kinds.hasCRD(crdGatewayClass) {
			continue
		}
		class := &gatewayv1.GatewayClass{}
		ok, err = r.getOptional(ctx, types.NamespacedName{Name: string(gw.Spec.GatewayClassName)}, class)
		if err != nil {
			return "", "", err
		}
		if ok {
			if slices.Contains(convention.IstioGatewayControllers, string(class.Spec.ControllerName)) {
				istio = true
				p.istioGateways = append(p.istioGateways, key)
			}
			btp = btp || slices.Contains(convention.BackendTLSPolicyGatewayControllers, string(class.Spec.ControllerName))
		}
	}
	switch {
	case istio && r.kinds.hasCRD(crdDestinationRule):
		shadow, err := r.shadowService(ctx, p)
		return convention.GatewayTLSIstio, shadow, err
	case !istio && btp && r.kinds.hasCRD(crdBackendTLSPolicy):
		return convention.GatewayTLSBackendTLSPolicy, "", nil
	}
	return convention.GatewayTLSNone, "", nil
}

// routeParents are the Gateways the service's routes attach to: the
// managed route's parents as rendered, or those of the routes it refers to.
func (r *Reconciler) routeParents(ctx context.Context, p *pass) ([]types.NamespacedName, error) {
	var routes []*gatewayv1.HTTPRoute
	for _, o := range p.res.Objects {
		if rt, ok := o.(*gatewayv1.HTTPRoute); ok {
			routes = append(routes, rt)
		}
	}
	if rt := p.plan.Shape.Router; len(routes) == 0 && rt != nil && rt.Route != nil && rt.Route.HTTP != nil && r.kinds.hasCRD(crdHTTPRoute) {
		for _, ref := range rt.Route.HTTP.Refs {
			live := &gatewayv1.HTTPRoute{}
			ok, err := r.getOptional(ctx, types.NamespacedName{Namespace: p.svc.Namespace, Name: ref.Name}, live)
			if err != nil {
				return nil, err
			}
			if ok {
				routes = append(routes, live)
			}
		}
	}
	var out []types.NamespacedName
	for _, rt := range routes {
		for _, key := range gatewayParents(rt) {
			if !slices.Contains(out, key) {
				out = append(out, key)
			}
		}
	}
	return out, nil
}

// gatewayParents are the Gateways a route names as parents.
func gatewayParents(rt *gatewayv1.HTTPRoute) []types.NamespacedName {
	var out []types.NamespacedName
	for _, ref := range rt.Spec.ParentRefs {
		if (ref.Kind != nil && *ref.Kind != "Gateway") || (ref.Group != nil && *ref.Group != gatewayv1.GroupName) {
			continue
		}
		ns := rt.Namespace
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		key := types.NamespacedName{Namespace: ns, Name: string(ref.Name)}
		if !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out
}

// shadowService finds the Service Istio made for the service's managed
// pool: the first by name of those labelled with the pool's name.
func (r *Reconciler) shadowService(ctx context.Context, p *pass) (string, error) {
	if p.plan.Names.Pool == "" {
		return "", nil
	}
	list := &corev1.ServiceList{}
	if err := r.shadows.List(ctx, list, client.InNamespace(p.svc.Namespace),
		client.MatchingLabels{convention.LabelIstioInferencePool: p.plan.Names.Pool}); err != nil {
		return "", fmt.Errorf("list Istio's Services of InferencePool %s/%s: %w", p.svc.Namespace, p.plan.Names.Pool, err)
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "", nil
	}
	return names[0], nil
}

// forGatewayClass reconciles every service when a gateway class changes:
// classes are few and change seldom, and which gateways use one is not
// indexed.
func (r *Reconciler) forGatewayClass(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &v1alpha2.LLMInferenceServiceList{}
	if err := r.client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list LLMInferenceServices for a gateway class")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// forShadowService maps Istio's Service of an InferencePool to the service
// that owns the pool.
func (r *Reconciler) forShadowService(ctx context.Context, obj client.Object) []reconcile.Request {
	pool := obj.GetLabels()[convention.LabelIstioInferencePool]
	if pool == "" || !r.kinds.hasCRD(crdPoolV1) {
		return nil
	}
	ip := &gieapiv1.InferencePool{}
	if ok, err := r.getOptional(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: pool}, ip); err != nil || !ok {
		return nil
	}
	q := requests{}
	r.owner(q, ip)
	return q.list()
}
