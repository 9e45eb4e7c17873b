package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// withholdRoute fails closed (docs/auth.md): with auth on, a managed route
// reaches its backends only once Kuadrant confirms that the policies
// protecting it are enforced.
//
//   - Kuadrant's AuthPolicy CRD is not usable: the route (and the
//     service's AuthPolicies) is not applied, and prune deletes one
//     applied before (reason CRDMissing).
//   - A protected service's route attaches to a listener that no
//     AuthPolicy targets (the chart makes <gateway>-authn with
//     auth.enabled, a default deny that covers the route until the
//     route's own policy is in force): the route is not applied
//     (AuthPolicyMissing).
//   - Such policies exist, but Kuadrant does not report them, or the
//     route's own AuthPolicy, Accepted and Enforced for their current
//     generation: the route is applied fenced, its rules without
//     backendRefs, so the gateway answers every request on it with 500
//     (Gateway API's answer for a rule with no backend) and no request
//     reaches the model (AuthNotEnforced). Applied, because Kuadrant
//     enforces a policy only in the path of an existing route, and a
//     route's own policy only once its target exists.
//
// A service opened with the enable-auth annotation brings its own policy
// for its route and waits for that one only. The workloads are not held
// back. The route comes when what was missing does: the CRD watcher, and
// the watch of AuthPolicies (their status included), reconcile the
// services then. In static mode Helm applies the route. A service whose
// routes are its own has only its AuthPolicies held back while the CRD is
// missing.
func (r *Reconciler) withholdRoute(ctx context.Context, p *pass) error {
	if r.opts.StaticMode {
		return nil
	}
	r.withholdMaaSRoute(p)
	if !r.opts.Auth {
		return nil
	}
	route := p.res.Named(engine.RoleRoute)
	if route == "" {
		// Routes of the user's own (route.http.refs) are theirs: neither
		// applied nor withheld. Their AuthPolicies come with the CRD.
		if !r.kinds.hasCRD(crdAuthPolicy) {
			p.res = p.res.Without(engine.RoleAuth)
		}
		return nil
	}
	if !r.kinds.hasCRD(crdAuthPolicy) {
		p.routeWithheldReason = ReasonCRDMissing
		p.routeWithheld = fmt.Sprintf("auth is on (--enable-auth) and Kuadrant's AuthPolicy CRD %s (%s/v1) is not established, "+
			"so HTTPRoute %s is not served: no request may reach the model unchecked. Install Kuadrant (Red Hat Connectivity Link "+
			"on OpenShift); the route comes when the CRD does. Or turn auth off (chart value auth.enabled=false)",
			crdAuthPolicy, convention.KuadrantGroup, route)
		p.res = p.res.Without(engine.RoleRoute, engine.RoleAuth)
		return nil
	}
	protected := r.needsAuthPolicy(p)
	var uncovered, unenforced, fenced []string
	res := *p.res
	res.Objects = slices.Clone(p.res.Objects)
	for i, o := range res.Objects {
		rt, ok := o.(*gatewayv1.HTTPRoute)
		if !ok || res.Children[i].Role != engine.RoleRoute {
			continue
		}
		g, err := r.gateRoute(ctx, p, rt, protected)
		if err != nil {
			return err
		}
		uncovered = append(uncovered, g.uncovered...)
		if len(g.unenforced) > 0 {
			unenforced = append(unenforced, g.unenforced...)
			fenced = append(fenced, rt.Name)
			res.Objects[i] = fence(rt)
		}
	}
	switch {
	case len(uncovered) > 0:
		p.routeWithheldReason = ReasonAuthPolicyMissing
		p.routeWithheld = fmt.Sprintf("auth is on (--enable-auth) and no AuthPolicy targets %s, so HTTPRoute %s is "+
			"not served: no request may reach the model unchecked. Install the chart with auth.enabled=true (it makes "+
			"<gateway>-authn), or write an AuthPolicy for the Gateway; the route comes when one exists",
			strings.Join(uncovered, ", "), route)
		p.res = p.res.Without(engine.RoleRoute, engine.RoleAuth)
	case len(fenced) > 0:
		p.routeWithheldReason = ReasonAuthNotEnforced
		p.routeWithheld = fmt.Sprintf("auth is on (--enable-auth) and Kuadrant has not confirmed that the AuthPolicies "+
			"protecting HTTPRoute %s are Accepted and Enforced, so the route is applied without its backends (the "+
			"gateway answers 500) and no request reaches the model: %s",
			strings.Join(fenced, ", "), strings.Join(unenforced, "; "))
		p.res = &res
	}
	return nil
}

// withholdMaaSRoute fails closed on the MaaS gateway, with or without
// --enable-auth: a service's MaaS route is never served without its own
// AuthPolicy (the MaaS checks), so while Kuadrant's AuthPolicy CRD is not
// usable neither is applied, and prune deletes them. p.maasWithheld says
// so in TiersBound (access). The managed route is not concerned: the MaaS
// route is the only way in on the MaaS gateway, and the listener's policy
// denies by default.
func (r *Reconciler) withholdMaaSRoute(p *pass) {
	route := p.res.Named(engine.RoleMaaSRoute)
	if route == "" || r.kinds.hasCRD(crdAuthPolicy) {
		return
	}
	p.maasWithheld = fmt.Sprintf("Kuadrant's AuthPolicy CRD %s (%s/v1) is not established, so HTTPRoute %s is not served on the "+
		"MaaS gateway: no MaaS request may reach the model unchecked. Install Kuadrant (Red Hat Connectivity Link on OpenShift); "+
		"the route comes when the CRD does", crdAuthPolicy, convention.KuadrantGroup, route)
	p.res = p.res.Without(engine.RoleMaaSRoute, engine.RoleMaaSAuth)
}

// fence is the route without its backends: the same parents, matches and
// filters, so that Kuadrant computes and enforces the same policies on it,
// but every rule answers 500.
func fence(rt *gatewayv1.HTTPRoute) *gatewayv1.HTTPRoute {
	out := rt.DeepCopy()
	for i := range out.Spec.Rules {
		out.Spec.Rules[i].BackendRefs = nil
	}
	return out
}

// needsAuthPolicy reports whether the service's routes must have an
// AuthPolicy enforced on them to be ready: auth is on and the service is
// not opened with convention.AnnotationEnableAuth "false".
func (r *Reconciler) needsAuthPolicy(p *pass) bool {
	return r.opts.Auth && !build.AuthDisabled(p.svc.Annotations)
}

// authVerdict is ready when Kuadrant's policy controller reports, on a
// parent of the route, that an AuthPolicy is enforced on it (condition
// kuadrant.io/AuthPolicyAffected True, for the route's generation), and on
// none that it is not.
func authVerdict(rt *gatewayv1.HTTPRoute) verdict {
	seen := false
	for _, p := range rt.Status.Parents {
		if p.ControllerName != convention.KuadrantPolicyController {
			continue
		}
		c := fresh(p.Conditions, convention.ConditionAuthPolicyAffected, rt.Generation)
		if c == nil {
			continue
		}
		if c.Status != metav1.ConditionTrue {
			return notReady(ReasonAuthNotEnforced, "HTTPRoute %s: parent %s: %s is %s (%s): %s",
				rt.Name, p.ParentRef.Name, convention.ConditionAuthPolicyAffected, c.Status, c.Reason, c.Message)
		}
		seen = true
	}
	if !seen {
		return notReady(ReasonAuthNotEnforced, "HTTPRoute %s: Kuadrant has not reported an AuthPolicy enforced on it "+
			"(%s True on a %s parent); is Kuadrant running, and does an AuthPolicy target the route's gateway?",
			rt.Name, convention.ConditionAuthPolicyAffected, convention.KuadrantPolicyController)
	}
	return verdict{ok: true, reason: ReasonReady}
}
