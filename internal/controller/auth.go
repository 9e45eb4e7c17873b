package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// withholdRoute fails closed (docs/auth.md): with auth on and Kuadrant's
// AuthPolicy CRD not usable, nothing would check the requests the managed
// route lets in, so the route (and the anonymous AuthPolicy) is not
// applied, and prune deletes one applied before. The workloads are not
// held back. The route comes when the CRD does: the CRD watcher
// reconciles every service then. In static mode Helm applies the route.
func (r *Reconciler) withholdRoute(p *pass) {
	if !r.opts.Auth || r.opts.StaticMode || r.kinds.hasCRD(crdAuthPolicy) {
		return
	}
	route := p.res.Named(engine.RoleRoute)
	if route == "" {
		return
	}
	p.res = p.res.Without(engine.RoleRoute, engine.RoleAuth)
	p.routeWithheld = fmt.Sprintf("auth is on (--enable-auth) and Kuadrant's AuthPolicy CRD %s (%s/v1) is not established, "+
		"so HTTPRoute %s is not served: no request may reach the model unchecked. Install Kuadrant (Red Hat Connectivity Link "+
		"on OpenShift); the route comes when the CRD does. Or turn auth off (chart value auth.enabled=false)",
		crdAuthPolicy, convention.KuadrantGroup, route)
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
