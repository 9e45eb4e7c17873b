package controller

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// withholdRoute fails closed (docs/auth.md): with auth on, the managed
// route (and its AuthPolicy) is not applied, and prune deletes one applied
// before, while nothing would check the requests it lets in: Kuadrant's
// AuthPolicy CRD is not usable, or, for a protected service, a Gateway the
// route attaches to has no AuthPolicy (the chart's <gateway>-authn, a
// default deny that covers the route until the route's own policy is in
// force). A service opened with the enable-auth annotation brings its own
// anonymous policy and does not wait for the gateway's. The workloads are
// not held back. The route comes when what was missing does: the CRD
// watcher, and the watch of AuthPolicies, reconcile the services then. In
// static mode Helm applies the route. A service whose routes are its own
// has only its AuthPolicies held back while the CRD is missing.
func (r *Reconciler) withholdRoute(ctx context.Context, p *pass) error {
	if !r.opts.Auth || r.opts.StaticMode {
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
	switch {
	case !r.kinds.hasCRD(crdAuthPolicy):
		p.routeWithheldReason = ReasonCRDMissing
		p.routeWithheld = fmt.Sprintf("auth is on (--enable-auth) and Kuadrant's AuthPolicy CRD %s (%s/v1) is not established, "+
			"so HTTPRoute %s is not served: no request may reach the model unchecked. Install Kuadrant (Red Hat Connectivity Link "+
			"on OpenShift); the route comes when the CRD does. Or turn auth off (chart value auth.enabled=false)",
			crdAuthPolicy, convention.KuadrantGroup, route)
	case r.needsAuthPolicy(p):
		unprotected, err := r.unprotectedGateways(ctx, p)
		if err != nil {
			return err
		}
		if len(unprotected) == 0 {
			return nil
		}
		p.routeWithheldReason = ReasonAuthPolicyMissing
		p.routeWithheld = fmt.Sprintf("auth is on (--enable-auth) and no AuthPolicy targets Gateway %s, so HTTPRoute %s is "+
			"not served: no request may reach the model unchecked. Install the chart with auth.enabled=true (it makes "+
			"<gateway>-authn), or write an AuthPolicy for the Gateway; the route comes when one exists",
			strings.Join(unprotected, ", "), route)
	default:
		return nil
	}
	p.res = p.res.Without(engine.RoleRoute, engine.RoleAuth)
	return nil
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
