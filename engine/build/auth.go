package build

import (
	"fmt"
	"strings"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/naming"
)

// ComponentAuth labels a service's anonymous AuthPolicy.
const ComponentAuth = "llminferenceservice-auth"

// anonymousAuth opens the service's routes to anyone while auth is on,
// for a service annotated convention.AnnotationEnableAuth "false": a
// Kuadrant AuthPolicy on each route whose rules, more specific than the
// gateway's defaults, replace them for that route. It lets every request
// in (anonymous authentication, no authorization rule). The managed
// route's is <service>-kserve-route-authn, as ODH names it; each route of
// the user's own (route.http.refs, in the service's namespace) gets
// <route>-authn, one policy per route however many services name it.
func (b *builder) anonymousAuth() error {
	if !b.opts.Auth || !AuthDisabled(b.svc.Annotations) {
		return nil
	}
	if b.builtIn("gateway.networking.k8s.io", "HTTPRoute", b.names.route) {
		b.add(b.anonymousPolicy(b.names.routeAuth, b.names.route))
		return nil
	}
	r := b.spec.Router
	if r == nil || r.Route == nil || r.Route.HTTP == nil {
		return nil
	}
	for i, ref := range r.Route.HTTP.Refs {
		name, err := naming.ChildName(ref.Name, RouteRefAuthPolicySuffix)
		if err != nil {
			return fmt.Errorf("spec.router.route.http.refs[%d]: the AuthPolicy's name: %w", i, err)
		}
		b.add(b.anonymousPolicy(name, ref.Name))
	}
	return nil
}

// RouteRefAuthPolicySuffix names the anonymous AuthPolicy of a route of the
// user's own: <route>-authn.
const RouteRefAuthPolicySuffix = "-authn"

// anonymousPolicy is an AuthPolicy named name that lets anyone through the
// HTTPRoute route.
func (b *builder) anonymousPolicy(name, route string) Object {
	return b.custom(convention.KuadrantGroup+"/v1", "AuthPolicy", name, ComponentAuth, map[string]any{
		"targetRef": map[string]any{
			"group": "gateway.networking.k8s.io",
			"kind":  "HTTPRoute",
			"name":  route,
		},
		"rules": map[string]any{
			"authentication": map[string]any{
				"public": map[string]any{"anonymous": map[string]any{}},
			},
		},
	})
}

// AuthDisabled reports whether a service's annotations open it to
// anonymous callers: convention.AnnotationEnableAuth "false", in any case.
// Anything else, or nothing, keeps it protected.
func AuthDisabled(annotations map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(annotations[convention.AnnotationEnableAuth]), "false")
}
