package controller

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// unprotectedGateways are the Gateways the service's built route attaches
// to that no AuthPolicy targets: a route on one would be served unchecked.
// A Gateway whose AuthPolicies the controller cannot read (a namespace
// outside its cache) counts as unprotected, and says so.
func (r *Reconciler) unprotectedGateways(ctx context.Context, p *pass) ([]string, error) {
	parents, err := r.routeParents(ctx, p)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, gw := range parents {
		ok, err := r.gatewayProtected(ctx, gw)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s (its AuthPolicies cannot be read: %v)", gw, err))
		case !ok:
			out = append(out, gw.String())
		}
	}
	return out, nil
}

// gatewayProtected reports whether an AuthPolicy in the Gateway's namespace
// targets it.
func (r *Reconciler) gatewayProtected(ctx context.Context, gw types.NamespacedName) (bool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvkAuthPolicy.GroupVersion().WithKind(gvkAuthPolicy.Kind + "List"))
	if err := r.client.List(ctx, list, client.InNamespace(gw.Namespace)); err != nil {
		return false, fmt.Errorf("list AuthPolicies in %s: %w", gw.Namespace, err)
	}
	return slices.ContainsFunc(list.Items, func(u unstructured.Unstructured) bool {
		return targetsGateway(&u, gw.Name)
	}), nil
}

// targetsGateway reports whether the AuthPolicy targets the Gateway name
// of its namespace (name "" for any Gateway).
func targetsGateway(policy *unstructured.Unstructured, name string) bool {
	ref, _, _ := unstructured.NestedStringMap(policy.Object, "spec", "targetRef")
	return ref["group"] == gatewayv1.GroupName && ref["kind"] == "Gateway" && (name == "" || ref["name"] == name)
}

// forAuthPolicy maps an AuthPolicy to the services it concerns: a
// Gateway's, to every service (the routes withheld for want of it are not
// there to be found, and gateway policies are few and change seldom); a
// service's own, to that service.
func (r *Reconciler) forAuthPolicy(ctx context.Context, obj client.Object) []reconcile.Request {
	if u, ok := obj.(*unstructured.Unstructured); ok && targetsGateway(u, "") {
		return r.forGatewayClass(ctx, obj)
	}
	q := requests{}
	r.owner(q, obj)
	return q.list()
}
