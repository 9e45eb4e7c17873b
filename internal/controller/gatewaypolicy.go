package controller

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// authGate is what Kuadrant has not confirmed yet about the policies that
// must protect a managed route (docs/auth.md, "Served only when
// enforced").
type authGate struct {
	// uncovered are the listeners (Gateway namespace/name, listener) that
	// no AuthPolicy targets: nothing would ever check a request there.
	uncovered []string
	// unenforced say, policy by policy, which of those that must protect
	// the route Kuadrant has not reported Accepted and Enforced.
	unenforced []string
}

// gateRoute checks the policies that protect the rendered route rt.
//
//   - Every AuthPolicy of the service that targets rt (its own) must be
//     Accepted and Enforced, as Kuadrant reports them for their current
//     generation.
//   - With gateway true (a protected service), every listener the route
//     attaches to must be covered by an AuthPolicy on its Gateway, or on
//     that listener (sectionName), and every such policy must be Accepted
//     and either Enforced or Overridden (Enforced False with reason
//     Overridden: its rules are replaced on every route in its path by
//     more specific policies). At least one must be Enforced, or the
//     route's own policies (enforced, above) must be what overrides them:
//     an override by a policy that is not enforced protects nothing.
//
// A Gateway or AuthPolicies the controller cannot read count as not
// covered, and say so.
func (r *Reconciler) gateRoute(ctx context.Context, p *pass, rt *gatewayv1.HTTPRoute, gateway bool) (authGate, error) {
	var g authGate
	own := 0
	for _, o := range p.res.Objects {
		policy, ok := o.(*unstructured.Unstructured)
		if !ok || policy.GetKind() != "AuthPolicy" || !targetsRoute(policy, rt.Name) {
			continue
		}
		own++
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvkAuthPolicy)
		found, err := r.getOptional(ctx, types.NamespacedName{Namespace: rt.Namespace, Name: policy.GetName()}, live)
		switch {
		case err != nil:
			return g, err
		case !found:
			g.unenforced = append(g.unenforced, fmt.Sprintf("AuthPolicy %s/%s (the route's own) is not there yet", rt.Namespace, policy.GetName()))
		default:
			if why := policyNotEnforced(live, false); why != "" {
				g.unenforced = append(g.unenforced, fmt.Sprintf("AuthPolicy %s/%s (the route's own): %s", rt.Namespace, policy.GetName(), why))
			}
		}
	}
	ownEnforced := own > 0 && len(g.unenforced) == 0
	if !gateway {
		return g, nil
	}
	for _, ref := range rt.Spec.ParentRefs {
		if (ref.Kind != nil && *ref.Kind != "Gateway") || (ref.Group != nil && *ref.Group != gatewayv1.GroupName) {
			continue
		}
		key := types.NamespacedName{Namespace: rt.Namespace, Name: string(ref.Name)}
		if ref.Namespace != nil {
			key.Namespace = string(*ref.Namespace)
		}
		r.gateParent(ctx, key, ref, ownEnforced, &g)
	}
	return g, nil
}

// gateParent adds to g what is missing on the listeners of the Gateway key
// that the parent reference ref attaches to: those named by its
// sectionName or port, else all of them. A Gateway that does not exist
// has no listener to name: only a policy on the whole Gateway would cover
// it, and Kuadrant accepts none while its target is missing. ownEnforced:
// the route's own policies are enforced, so gateway policies overridden
// (by them) protect it.
func (r *Reconciler) gateParent(ctx context.Context, key types.NamespacedName, ref gatewayv1.ParentReference, ownEnforced bool, g *authGate) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvkAuthPolicy.GroupVersion().WithKind(gvkAuthPolicy.Kind + "List"))
	if err := r.client.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
		g.uncovered = append(g.uncovered, fmt.Sprintf("Gateway %s (its AuthPolicies cannot be read: %v)", key, err))
		return
	}
	listeners := []string{""}
	gw := &gatewayv1.Gateway{}
	found, err := r.getOptional(ctx, key, gw)
	if err != nil {
		g.uncovered = append(g.uncovered, fmt.Sprintf("Gateway %s (it cannot be read: %v)", key, err))
		return
	}
	if found {
		listeners = attachedListeners(gw, ref)
	}
	for _, listener := range listeners {
		where := "Gateway " + key.String()
		if listener != "" {
			where += " listener " + listener
		}
		var covering []*unstructured.Unstructured
		for i := range list.Items {
			if section, ok := gatewayTarget(&list.Items[i], key.Name); ok && (section == "" || section == listener) {
				covering = append(covering, &list.Items[i])
			}
		}
		if len(covering) == 0 {
			g.uncovered = append(g.uncovered, where)
			continue
		}
		enforced, refused := false, false
		for _, policy := range covering {
			if why := policyNotEnforced(policy, true); why != "" {
				g.unenforced = append(g.unenforced, fmt.Sprintf("AuthPolicy %s/%s on %s: %s", policy.GetNamespace(), policy.GetName(), where, why))
				refused = true
				continue
			}
			enforced = enforced || policyNotEnforced(policy, false) == ""
		}
		if !refused && !enforced && !ownEnforced {
			g.unenforced = append(g.unenforced, fmt.Sprintf("no AuthPolicy on %s is Enforced, and the route has none of its own that is", where))
		}
	}
}

// attachedListeners are the names of gw's listeners that ref attaches a
// route to: the one its sectionName names, those on its port, or all.
// A sectionName or port that matches no listener attaches to none, and
// the route is not served there; it is named anyway, so that only a
// policy on the whole Gateway covers it.
func attachedListeners(gw *gatewayv1.Gateway, ref gatewayv1.ParentReference) []string {
	var out []string
	for _, l := range gw.Spec.Listeners {
		if (ref.SectionName != nil && *ref.SectionName != l.Name) || (ref.Port != nil && *ref.Port != l.Port) {
			continue
		}
		out = append(out, string(l.Name))
	}
	if len(out) == 0 && ref.SectionName != nil {
		out = []string{string(*ref.SectionName)}
	}
	if len(out) == 0 {
		out = []string{""}
	}
	return out
}

// policyNotEnforced says why Kuadrant does not report the AuthPolicy
// Accepted and Enforced for its current generation, or "" when it does.
// With overridden, Enforced False for the reason Overridden counts as
// enforced: the policy's rules are replaced by more specific ones.
func policyNotEnforced(policy *unstructured.Unstructured, overridden bool) string {
	observed, _, _ := unstructured.NestedInt64(policy.Object, "status", "observedGeneration")
	if observed != policy.GetGeneration() {
		return fmt.Sprintf("Kuadrant has not reported on generation %d yet (status.observedGeneration %d); is Kuadrant running?",
			policy.GetGeneration(), observed)
	}
	raw, _, _ := unstructured.NestedSlice(policy.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, c := range raw {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		var cond metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond); err == nil {
			conds = append(conds, cond)
		}
	}
	find := func(typ string) *metav1.Condition {
		i := slices.IndexFunc(conds, func(c metav1.Condition) bool { return c.Type == typ })
		if i < 0 {
			return nil
		}
		return &conds[i]
	}
	for _, typ := range []string{convention.ConditionPolicyAccepted, convention.ConditionPolicyEnforced} {
		c := find(typ)
		switch {
		case c == nil:
			return fmt.Sprintf("Kuadrant reports no %s condition", typ)
		case c.Status == metav1.ConditionTrue:
			continue
		case typ == convention.ConditionPolicyEnforced && overridden && c.Reason == convention.ReasonPolicyOverridden:
			continue
		default:
			return fmt.Sprintf("%s %s (%s): %s", typ, c.Status, c.Reason, c.Message)
		}
	}
	return ""
}

// gatewayTarget reports whether the AuthPolicy targets the Gateway name of
// its namespace (name "" for any Gateway), and the listener it names
// (sectionName; "" for the whole Gateway).
func gatewayTarget(policy *unstructured.Unstructured, name string) (string, bool) {
	ref, _, _ := unstructured.NestedStringMap(policy.Object, "spec", "targetRef")
	ok := ref["group"] == gatewayv1.GroupName && ref["kind"] == "Gateway" && (name == "" || ref["name"] == name)
	return ref["sectionName"], ok
}

// targetsRoute reports whether the AuthPolicy targets the HTTPRoute name of
// its namespace (the whole route, or a rule of it).
func targetsRoute(policy *unstructured.Unstructured, name string) bool {
	ref, _, _ := unstructured.NestedStringMap(policy.Object, "spec", "targetRef")
	return ref["group"] == gatewayv1.GroupName && ref["kind"] == "HTTPRoute" && ref["name"] == name
}

// forAuthPolicy maps an AuthPolicy to the services it concerns: a
// Gateway's, to every service (the routes withheld for want of it are not
// there to be found, and gateway policies are few and change seldom); a
// service's own, to that service. Kuadrant's writes of a policy's status
// come here too: they decide whether a route is served.
func (r *Reconciler) forAuthPolicy(ctx context.Context, obj client.Object) []reconcile.Request {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if _, gw := gatewayTarget(u, ""); gw {
			return r.forGatewayClass(ctx, obj)
		}
	}
	q := requests{}
	r.owner(q, obj)
	return q.list()
}
