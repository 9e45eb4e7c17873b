package kuadrant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/test/authpolicy"
	"github.com/opendatahub-io/odh-serving/test/gateway"
)

// PolicyController is Kuadrant's controllerName on the route parent
// statuses it writes.
const PolicyController = gatewayv1.GatewayController(convention.KuadrantPolicyController)

// path is one way a request takes: a Gateway's listener, a route attached
// to it, a rule of the route.
type path struct {
	at gateway.AuthTarget
}

// Sync writes once, on the AuthPolicies and HTTPRoutes in the namespaces
// given, the status Kuadrant's policy controller would write (doc.go). The
// Gateways may be in any namespace. Without the AuthPolicy CRD it does
// nothing. A write that conflicts with another is skipped: the next Sync
// writes it.
func Sync(ctx context.Context, c client.Client, namespaces ...string) error {
	var policies []unstructured.Unstructured
	var routes []gatewayv1.HTTPRoute
	for _, ns := range namespaces {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gateway.AuthPolicyGVK.GroupVersion().WithKind(gateway.AuthPolicyGVK.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("list AuthPolicies in %s: %w", ns, err)
		}
		policies = append(policies, list.Items...)
		rts := &gatewayv1.HTTPRouteList{}
		if err := c.List(ctx, rts, client.InNamespace(ns)); err != nil && !meta.IsNoMatchError(err) {
			return fmt.Errorf("list HTTPRoutes in %s: %w", ns, err)
		}
		routes = append(routes, rts.Items...)
	}
	s := &syncer{c: c, gateways: map[types.NamespacedName]*gatewayv1.Gateway{}}
	paths, err := s.paths(ctx, routes)
	if err != nil {
		return err
	}
	var accepted []unstructured.Unstructured
	var errs []error
	for i := range policies {
		p := &policies[i]
		ok, err := s.accept(ctx, p, routes)
		if err != nil {
			return err
		}
		if ok {
			accepted = append(accepted, *p)
		}
	}
	for i := range policies {
		p := &policies[i]
		if i := slices.IndexFunc(accepted, func(a unstructured.Unstructured) bool { return a.GetUID() == p.GetUID() }); i >= 0 {
			enforced(p, accepted, paths)
			accepted[i] = *p
		}
		if err := writeStatus(ctx, c, p); err != nil {
			errs = append(errs, err)
		}
	}
	for i := range routes {
		if err := s.affected(ctx, &routes[i], accepted, paths); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type syncer struct {
	c        client.Client
	gateways map[types.NamespacedName]*gatewayv1.Gateway
}

// gateway is the Gateway key, or nil when it does not exist.
func (s *syncer) gateway(ctx context.Context, key types.NamespacedName) (*gatewayv1.Gateway, error) {
	if gw, ok := s.gateways[key]; ok {
		return gw, nil
	}
	gw := &gatewayv1.Gateway{}
	if err := s.c.Get(ctx, key, gw); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get Gateway %s: %w", key, err)
		}
		gw = nil
	}
	s.gateways[key] = gw
	return gw, nil
}

// paths are the paths of the routes through the listeners that are
// Programmed and whose Gateway accepted the route, as Kuadrant counts
// them (a listener and a route that are ready).
func (s *syncer) paths(ctx context.Context, routes []gatewayv1.HTTPRoute) ([]path, error) {
	var out []path
	for i := range routes {
		rt := &routes[i]
		for _, ref := range rt.Spec.ParentRefs {
			key, ok := parentKey(rt, ref)
			if !ok {
				continue
			}
			gw, err := s.gateway(ctx, key)
			if err != nil {
				return nil, err
			}
			if gw == nil || !meta.IsStatusConditionTrue(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed)) || !acceptedBy(rt, key) {
				continue
			}
			for _, l := range gw.Spec.Listeners {
				if (ref.SectionName != nil && *ref.SectionName != l.Name) || (ref.Port != nil && *ref.Port != l.Port) || !listenerProgrammed(gw, l.Name) {
					continue
				}
				for j := range rt.Spec.Rules {
					out = append(out, path{at: gateway.AuthTarget{Gateway: key, Listener: l.Name, Route: rt, Rule: &rt.Spec.Rules[j]}})
				}
			}
		}
	}
	return out, nil
}

func parentKey(rt *gatewayv1.HTTPRoute, ref gatewayv1.ParentReference) (types.NamespacedName, bool) {
	if (ref.Kind != nil && *ref.Kind != "Gateway") || (ref.Group != nil && *ref.Group != gatewayv1.GroupName) {
		return types.NamespacedName{}, false
	}
	key := types.NamespacedName{Namespace: rt.Namespace, Name: string(ref.Name)}
	if ref.Namespace != nil {
		key.Namespace = string(*ref.Namespace)
	}
	return key, true
}

// acceptedBy reports whether the Gateway's controller accepted the route
// (a parent status of a controller other than Kuadrant's, Accepted True).
func acceptedBy(rt *gatewayv1.HTTPRoute, key types.NamespacedName) bool {
	return slices.ContainsFunc(rt.Status.Parents, func(p gatewayv1.RouteParentStatus) bool {
		k, ok := parentKey(rt, p.ParentRef)
		return ok && k == key && p.ControllerName != PolicyController &&
			meta.IsStatusConditionTrue(p.Conditions, string(gatewayv1.RouteConditionAccepted))
	})
}

// listenerProgrammed: a listener whose status the gateway wrote must be
// Programmed; one without a status is taken as the Gateway is.
func listenerProgrammed(gw *gatewayv1.Gateway, name gatewayv1.SectionName) bool {
	i := slices.IndexFunc(gw.Status.Listeners, func(l gatewayv1.ListenerStatus) bool { return l.Name == name })
	return i < 0 || meta.IsStatusConditionTrue(gw.Status.Listeners[i].Conditions, string(gatewayv1.ListenerConditionProgrammed))
}

// accept sets the policy's Accepted condition: its target exists.
func (s *syncer) accept(ctx context.Context, p *unstructured.Unstructured, routes []gatewayv1.HTTPRoute) (bool, error) {
	ref, _, _ := unstructured.NestedStringMap(p.Object, "spec", "targetRef")
	section := ref["sectionName"]
	found := false
	switch {
	case ref["group"] != gatewayv1.GroupName:
	case ref["kind"] == "Gateway":
		gw, err := s.gateway(ctx, types.NamespacedName{Namespace: p.GetNamespace(), Name: ref["name"]})
		if err != nil {
			return false, err
		}
		found = gw != nil && (section == "" || slices.ContainsFunc(gw.Spec.Listeners, func(l gatewayv1.Listener) bool { return string(l.Name) == section }))
	case ref["kind"] == "HTTPRoute":
		found = slices.ContainsFunc(routes, func(rt gatewayv1.HTTPRoute) bool {
			return rt.Namespace == p.GetNamespace() && rt.Name == ref["name"] && (section == "" ||
				slices.ContainsFunc(rt.Spec.Rules, func(r gatewayv1.HTTPRouteRule) bool { return r.Name != nil && string(*r.Name) == section }))
		})
	}
	cond := metav1.Condition{Type: convention.ConditionPolicyAccepted, Status: metav1.ConditionTrue, Reason: "Accepted",
		Message: "AuthPolicy has been accepted"}
	if !found {
		name := ref["name"]
		if section != "" {
			name += "/" + section
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "TargetNotFound", fmt.Sprintf("AuthPolicy target %s was not found", name)
	}
	setCondition(p, cond)
	if !found {
		removeCondition(p, convention.ConditionPolicyEnforced)
	}
	return found, nil
}

// enforced sets the accepted policy's Enforced condition from the paths it
// is on and those it is in effect on, among the accepted policies.
func enforced(p *unstructured.Unstructured, accepted []unstructured.Unstructured, paths []path) {
	cond := metav1.Condition{Type: convention.ConditionPolicyEnforced, Status: metav1.ConditionFalse, Reason: "Unknown"}
	if _, err := authpolicy.Parse(p); err != nil {
		cond.Message = "AuthPolicy has encountered some issues: the test gateway cannot enforce it: " + err.Error()
		setCondition(p, cond)
		return
	}
	on, effective := 0, 0
	var by []string
	for _, pa := range paths {
		if mine, err := gateway.EffectivePolicy([]unstructured.Unstructured{*p}, pa.at); err != nil {
			cond.Message = "AuthPolicy has encountered some issues: the test gateway cannot enforce it: " + err.Error()
			setCondition(p, cond)
			return
		} else if mine == nil {
			continue
		}
		on++
		winner, err := gateway.EffectivePolicy(accepted, pa.at)
		if err != nil {
			cond.Message = fmt.Sprintf("AuthPolicy has encountered some issues: the test gateway cannot enforce the policies on HTTPRoute %s/%s: %v",
				pa.at.Route.Namespace, pa.at.Route.Name, err)
			setCondition(p, cond)
			return
		}
		if winner.GetUID() == p.GetUID() {
			effective++
		} else if name := winner.GetNamespace() + "/" + winner.GetName(); !slices.Contains(by, name) {
			by = append(by, name)
		}
	}
	switch {
	case effective > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Enforced", "AuthPolicy has been successfully enforced"
		if effective < on {
			cond.Message = "AuthPolicy has been partially enforced"
		}
	case on > 0:
		slices.Sort(by)
		cond.Reason, cond.Message = convention.ReasonPolicyOverridden, "AuthPolicy is overridden by ["+strings.Join(by, " ")+"]"
	default:
		cond.Message = "AuthPolicy is not in the path to any existing routes"
	}
	setCondition(p, cond)
}

// affected writes, on each parent that accepted the route, Kuadrant's
// kuadrant.io/AuthPolicyAffected: True while an accepted policy is on the
// route's path, removed otherwise.
func (s *syncer) affected(ctx context.Context, rt *gatewayv1.HTTPRoute, accepted []unstructured.Unstructured, paths []path) error {
	var names []string
	gateways := map[types.NamespacedName]bool{}
	for _, pa := range paths {
		if pa.at.Route.UID != rt.UID {
			continue
		}
		gateways[pa.at.Gateway] = true
		for _, p := range accepted {
			if mine, _ := gateway.EffectivePolicy([]unstructured.Unstructured{p}, pa.at); mine != nil {
				if name := p.GetNamespace() + "/" + p.GetName(); !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
	}
	slices.Sort(names)
	parents := slices.Clone(rt.Status.Parents)
	out := parents[:0:0]
	for _, p := range parents {
		if p.ControllerName == PolicyController {
			if k, ok := parentKey(rt, p.ParentRef); ok && gateways[k] {
				continue // rewritten below
			}
			// A parent the route no longer reaches: Kuadrant leaves its
			// entry; drop the condition.
			meta.RemoveStatusCondition(&p.Conditions, convention.ConditionAuthPolicyAffected)
			if len(p.Conditions) == 0 {
				continue
			}
		}
		out = append(out, p)
	}
	keys := make([]types.NamespacedName, 0, len(gateways))
	for k := range gateways {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		if len(names) == 0 {
			continue
		}
		kind, ns := gatewayv1.Kind("Gateway"), gatewayv1.Namespace(k.Namespace)
		entry := gatewayv1.RouteParentStatus{
			ParentRef:      gatewayv1.ParentReference{Kind: &kind, Name: gatewayv1.ObjectName(k.Name), Namespace: &ns},
			ControllerName: PolicyController,
		}
		if i := slices.IndexFunc(parents, func(p gatewayv1.RouteParentStatus) bool {
			pk, ok := parentKey(rt, p.ParentRef)
			return ok && pk == k && p.ControllerName == PolicyController
		}); i >= 0 {
			entry.Conditions = slices.Clone(parents[i].Conditions)
		}
		meta.SetStatusCondition(&entry.Conditions, metav1.Condition{
			Type: convention.ConditionAuthPolicyAffected, Status: metav1.ConditionTrue, Reason: "Accepted",
			Message: "Object affected by AuthPolicy [" + strings.Join(names, " ") + "]", ObservedGeneration: rt.Generation,
		})
		out = append(out, entry)
	}
	if equality.Semantic.DeepEqual(out, rt.Status.Parents) {
		return nil
	}
	rt.Status.Parents = out
	if err := s.c.Status().Update(ctx, rt); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("status of HTTPRoute %s/%s: %w", rt.Namespace, rt.Name, err)
	}
	return nil
}

// conditions are the policy's status conditions.
func conditions(p *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	var out []metav1.Condition
	for _, c := range raw {
		if m, ok := c.(map[string]any); ok {
			var cond metav1.Condition
			if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
				out = append(out, cond)
			}
		}
	}
	return out
}

func putConditions(p *unstructured.Unstructured, conds []metav1.Condition) {
	raw := make([]any, 0, len(conds))
	for _, c := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err == nil {
			raw = append(raw, m)
		}
	}
	_ = unstructured.SetNestedSlice(p.Object, raw, "status", "conditions")
}

func setCondition(p *unstructured.Unstructured, c metav1.Condition) {
	conds := conditions(p)
	c.ObservedGeneration = p.GetGeneration()
	meta.SetStatusCondition(&conds, c)
	putConditions(p, conds)
}

func removeCondition(p *unstructured.Unstructured, typ string) {
	conds := conditions(p)
	meta.RemoveStatusCondition(&conds, typ)
	putConditions(p, conds)
}

// writeStatus writes the policy's status with its observedGeneration, when
// it changed.
func writeStatus(ctx context.Context, c client.Client, p *unstructured.Unstructured) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gateway.AuthPolicyGVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get AuthPolicy %s/%s: %w", p.GetNamespace(), p.GetName(), err)
	}
	if err := unstructured.SetNestedField(p.Object, p.GetGeneration(), "status", "observedGeneration"); err != nil {
		return fmt.Errorf("AuthPolicy %s/%s: %w", p.GetNamespace(), p.GetName(), err)
	}
	if live.GetGeneration() != p.GetGeneration() || equality.Semantic.DeepEqual(live.Object["status"], p.Object["status"]) {
		return nil
	}
	if err := c.Status().Update(ctx, p); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("status of AuthPolicy %s/%s: %w", p.GetNamespace(), p.GetName(), err)
	}
	return nil
}
