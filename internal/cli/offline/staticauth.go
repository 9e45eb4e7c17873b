package offline

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
)

// guardedGateways are the Gateways (namespace/name) that an AuthPolicy in
// the stream targets; a policy without a namespace is in defaultNamespace,
// as Helm installs it.
func guardedGateways(docs []manifest.Document, defaultNamespace string) map[string]bool {
	out := map[string]bool{}
	for _, d := range docs {
		o := d.Object
		if o.GetKind() != "AuthPolicy" || o.GroupVersionKind().Group != convention.KuadrantGroup {
			continue
		}
		ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "targetRef")
		if ref["group"] != "gateway.networking.k8s.io" || ref["kind"] != "Gateway" {
			continue
		}
		ns := o.GetNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		out[ns+"/"+ref["name"]] = true
	}
	return out
}

// checkGuarded fails closed in static mode with auth on (docs/auth.md):
// Helm applies the routes, so no controller can withhold them, and the
// render is the last place that can. A service's managed route must be
// covered by an AuthPolicy in the same stream: its own (the engine renders
// <service>-kserve-route-authn, protected or anonymous, for every service
// while auth is on), or, failing that, one on every Gateway it attaches
// to. The stream then always holds an AuthPolicy when it holds a route,
// and Helm refuses the whole release, applying nothing, while Kuadrant's
// CRD is missing.
func checkGuarded(res *engine.Result, children []*unstructured.Unstructured, guarded map[string]bool) error {
	route := res.Named(engine.RoleRoute)
	for _, c := range children {
		if c.GetKind() != "HTTPRoute" || c.GetName() != route {
			continue
		}
		if routeGuarded(children, c) {
			return nil
		}
		parents, _, _ := unstructured.NestedSlice(c.Object, "spec", "parentRefs")
		var open []string
		for _, p := range parents {
			ref, _ := p.(map[string]any)
			group, _ := ref["group"].(string)
			kind, _ := ref["kind"].(string)
			if group != "" && group != "gateway.networking.k8s.io" || kind != "" && kind != "Gateway" {
				continue
			}
			ns, _ := ref["namespace"].(string)
			if ns == "" {
				ns = c.GetNamespace()
			}
			name, _ := ref["name"].(string)
			if key := ns + "/" + name; !guarded[key] && !slices.Contains(open, key) {
				open = append(open, key)
			}
		}
		if len(open) > 0 {
			return fmt.Errorf("auth is on (--enable-auth) and no AuthPolicy in the stream targets HTTPRoute %s/%s or Gateway %s, which it attaches to: "+
				"it would be served unchecked. Render the chart with auth.enabled=true (it makes <gateway>-authn), add an AuthPolicy "+
				"for the route or the Gateway to the release, or open the service with %s: \"false\"",
				c.GetNamespace(), route, strings.Join(open, ", "), convention.AnnotationEnableAuth)
		}
	}
	return nil
}

// routeGuarded reports whether an AuthPolicy among children targets the
// HTTPRoute route (in its namespace).
func routeGuarded(children []*unstructured.Unstructured, route *unstructured.Unstructured) bool {
	return slices.ContainsFunc(children, func(o *unstructured.Unstructured) bool {
		if o.GetKind() != "AuthPolicy" || o.GroupVersionKind().Group != convention.KuadrantGroup || o.GetNamespace() != route.GetNamespace() {
			return false
		}
		ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "targetRef")
		return ref["group"] == "gateway.networking.k8s.io" && ref["kind"] == "HTTPRoute" && ref["name"] == route.GetName()
	})
}
