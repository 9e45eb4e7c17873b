package build

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// RouteError says why a service's managed route would reach beyond its
// owner: each entry names the field of the merged route
// (spec.router.route.http.spec...) and the rule it breaks. The engine
// refuses the service with it, and the validating webhook refuses the
// service with the same entries.
type RouteError struct {
	Errs field.ErrorList
}

func (e *RouteError) Error() string { return e.Errs.ToAggregate().Error() }

// CheckRouteOwner checks that the managed route of a service (its merged,
// evaluated spec.router.route.http.spec; nil when the service has none or
// uses spec.router.route.http.refs) only matches requests meant for the
// service:
//   - every path it matches is one of the service's own, /<namespace>/<name>
//     and /publishers/<namespace>/models/<model> (<model>: spec.model.name
//     or a LoRA adapter's name), exactly or below them, unless the match
//     also requires the model header (ModelHeader) to name one of the
//     service's own models, which confines it to requests that ask for
//     them (KServe's /v1/... header rules);
//   - every model header it matches names a model of the service's own
//     namespace, publishers/<namespace>/models/<model>, exactly;
//   - every hostname it claims is one the platform allows
//     (allowedHostnames: exact names, or "*.example.com" for any name below
//     example.com).
//
// Gateway API sends a request to the most specific match across all
// routes of a gateway (an exact path before a prefix, then the longest
// prefix, then the most header matches), so a route that matched another
// tenant's paths or model names would take that tenant's callers, their
// prompts and their tokens.
func CheckRouteOwner(namespace, name string, spec *v1alpha2.LLMInferenceServiceSpec, allowedHostnames []string) error {
	r := spec.Router
	if r == nil || r.Route == nil || r.Route.HTTP == nil || r.Route.HTTP.Spec == nil || len(r.Route.HTTP.Refs) > 0 {
		return nil
	}
	o := routeOwner{namespace: namespace, name: name, models: ownModels(spec)}
	root := field.NewPath("spec", "router", "route", "http", "spec")
	var errs field.ErrorList
	for i, h := range r.Route.HTTP.Spec.Hostnames {
		if !hostnameAllowed(string(h), allowedHostnames) {
			errs = append(errs, field.Forbidden(root.Child("hostnames").Index(i), fmt.Sprintf(
				"hostname %q is not one the platform allows routes to claim (allowed: %s); a route that claims a hostname takes every request for it "+
					"from the routes without one, so the platform lists the hostnames tenants may use (the chart's routes.allowedHostnames, "+
					"the controller's --route-allowed-hostnames)", h, listOrNone(allowedHostnames))))
		}
	}
	for i, rule := range r.Route.HTTP.Spec.Rules {
		if len(rule.Matches) == 0 {
			// Gateway API: a rule without matches matches every path.
			errs = append(errs, field.Forbidden(root.Child("rules").Index(i).Child("matches"), fmt.Sprintf(
				"a rule without matches matches every request on the gateway; match this service's paths (%s) or its model header", o.prefixes())))
			continue
		}
		for j, m := range rule.Matches {
			errs = append(errs, o.checkMatch(root.Child("rules").Index(i).Child("matches").Index(j), m)...)
		}
	}
	if len(errs) > 0 {
		return &RouteError{Errs: errs}
	}
	return nil
}

// routeOwner is what a service may route: its own paths and model names.
type routeOwner struct {
	namespace, name string
	models          []string // spec.model.name and the LoRA adapters' names
}

// ownModels are the names the service's pods serve and its header rules
// may name: spec.model.name and the LoRA adapters' names.
func ownModels(spec *v1alpha2.LLMInferenceServiceSpec) []string {
	var out []string
	if spec.Model.Name != nil && *spec.Model.Name != "" {
		out = append(out, *spec.Model.Name)
	}
	if spec.Model.LoRA != nil {
		for _, a := range spec.Model.LoRA.Adapters {
			if a.Name != nil && *a.Name != "" {
				out = append(out, *a.Name)
			}
		}
	}
	return out
}

// ownPaths are the path prefixes of the service: /<namespace>/<name> and
// /publishers/<namespace>/models/<model> per model.
func (o routeOwner) ownPaths() []string {
	out := []string{"/" + o.namespace + "/" + o.name}
	for _, m := range o.models {
		out = append(out, "/"+PublisherName(o.namespace, m))
	}
	return out
}

func (o routeOwner) prefixes() string {
	return strings.Join(o.ownPaths(), ", ") + " and below"
}

// checkMatch checks one match: its model headers, then its path.
func (o routeOwner) checkMatch(at *field.Path, m gatewayv1.HTTPRouteMatch) field.ErrorList {
	var errs field.ErrorList
	ownHeader := false
	for k, h := range m.Headers {
		if !isModelHeader(h) {
			continue
		}
		hp := at.Child("headers").Index(k)
		if h.Type != nil && *h.Type != gatewayv1.HeaderMatchExact {
			errs = append(errs, field.Forbidden(hp.Child("type"), fmt.Sprintf(
				"a %s match on %s: odh-serving cannot prove which models a pattern names, and it could name another namespace's; "+
					"match the header Exact, with publishers/%s/models/<model>", *h.Type, ModelHeader, o.namespace)))
			continue
		}
		model, ok := strings.CutPrefix(h.Value, "publishers/"+o.namespace+"/models/")
		if !ok || model == "" {
			errs = append(errs, field.Forbidden(hp.Child("value"), fmt.Sprintf(
				"%s %q names a model outside this service's namespace; a route may only match publishers/%s/models/<model>, "+
					"or it would take the callers of another namespace's model", ModelHeader, h.Value, o.namespace)))
			continue
		}
		if slices.Contains(o.models, model) {
			ownHeader = true
		}
	}
	if ownHeader {
		// The match takes only requests that name one of this service's
		// models, whatever their path.
		return errs
	}
	typ, value := gatewayv1.PathMatchPathPrefix, "/"
	if m.Path != nil {
		if m.Path.Type != nil {
			typ = *m.Path.Type
		}
		if m.Path.Value != nil {
			value = *m.Path.Value
		}
	}
	pp := at.Child("path", "value")
	if m.Path == nil || m.Path.Value == nil {
		pp = at.Child("path")
	}
	headerHint := fmt.Sprintf("a match outside them must also match the header %s: publishers/%s/models/<model> (Exact), for a model of this service (%s)",
		ModelHeader, o.namespace, listOrNone(o.models))
	switch typ {
	case gatewayv1.PathMatchExact, gatewayv1.PathMatchPathPrefix:
	case gatewayv1.PathMatchRegularExpression:
		return append(errs, field.Forbidden(pp, fmt.Sprintf(
			"path %q (RegularExpression): odh-serving cannot prove that a regular expression matches only this service's paths (%s); "+
				"use Exact or PathPrefix, or %s", value, o.prefixes(), headerHint)))
	default:
		// Not a type of Gateway API's: the API server refuses the route,
		// which then captures nothing, and says why.
		return errs
	}
	if why := unsafePath(value); why != "" {
		return append(errs, field.Forbidden(pp, fmt.Sprintf("path %q: %s; gateways normalize such paths, so it cannot be confined to this service's", value, why)))
	}
	decoded, err := url.PathUnescape(value)
	if err != nil || !o.within(value) || !o.within(decoded) {
		return append(errs, field.Forbidden(pp, fmt.Sprintf(
			"path %q (%s) lies outside this service's paths (%s): it would take requests meant for another service; %s",
			value, typ, o.prefixes(), headerHint)))
	}
	return errs
}

// within reports whether path is one of the service's paths or below one.
// Paths are compared by segment: /team-a/qwen-x is not below /team-a/qwen.
func (o routeOwner) within(path string) bool {
	return slices.ContainsFunc(o.ownPaths(), func(p string) bool { return path == p || strings.HasPrefix(path, p+"/") })
}

// unsafePath says why a path cannot be compared as written: the forms
// Gateway API's CRD refuses in a path match, because gateways collapse
// them before matching (dot segments, doubled slashes, encoded slashes).
func unsafePath(p string) string {
	switch {
	case !strings.HasPrefix(p, "/"):
		return "not an absolute path"
	case strings.Contains(p, "//"):
		return "it contains //"
	case strings.Contains(p, "/./"), strings.Contains(p, "/../"), strings.HasSuffix(p, "/."), strings.HasSuffix(p, "/.."):
		return "it contains a dot segment"
	case strings.Contains(strings.ToLower(p), "%2f"), strings.Contains(strings.ToLower(p), "%5c"):
		return "it contains an encoded slash"
	case strings.ContainsAny(p, "#?\\"):
		return "it contains #, ? or \\"
	}
	return ""
}

// hostnameAllowed reports whether a route's hostname is in allowed: the
// same name, or below a "*.domain" entry.
func hostnameAllowed(h string, allowed []string) bool {
	for _, a := range allowed {
		if h == a {
			return true
		}
		if suffix, ok := strings.CutPrefix(a, "*"); ok && strings.HasPrefix(suffix, ".") &&
			strings.HasSuffix(h, suffix) && len(h) > len(suffix) {
			return true
		}
	}
	return false
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
