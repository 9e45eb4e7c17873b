package build

import (
	"strings"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// ComponentAuth labels a service's anonymous AuthPolicy.
const ComponentAuth = "llminferenceservice-auth"

// anonymousAuth opens the managed route to anyone while auth is on, for a
// service annotated convention.AnnotationEnableAuth "false": a Kuadrant
// AuthPolicy on the route whose rules, more specific than the gateway's
// defaults, replace them for that route. It lets every request in
// (anonymous authentication, no authorization rule). A service whose
// routes are its own (route.http.refs) gets none: they keep the gateway's
// policy.
func (b *builder) anonymousAuth() {
	if !b.opts.Auth || !AuthDisabled(b.svc.Annotations) || !b.builtIn("gateway.networking.k8s.io", "HTTPRoute", b.names.route) {
		return
	}
	b.add(b.custom(convention.KuadrantGroup+"/v1", "AuthPolicy", b.names.routeAuth, ComponentAuth, map[string]any{
		"targetRef": map[string]any{
			"group": "gateway.networking.k8s.io",
			"kind":  "HTTPRoute",
			"name":  b.names.route,
		},
		"rules": map[string]any{
			"authentication": map[string]any{
				"public": map[string]any{"anonymous": map[string]any{}},
			},
		},
	}))
}

// AuthDisabled reports whether a service's annotations open it to
// anonymous callers: convention.AnnotationEnableAuth "false", in any case.
// Anything else, or nothing, keeps it protected.
func AuthDisabled(annotations map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(annotations[convention.AnnotationEnableAuth]), "false")
}
