package build

import (
	"fmt"
	"slices"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/naming"
)

// ComponentAuth labels a service's AuthPolicies.
const ComponentAuth = "llminferenceservice-auth"

// Rule names of a protected service's AuthPolicy, as the chart's gateway
// policy named them before it became a default deny.
const (
	AuthRuleAuthentication = "kubernetes-user"
	AuthRuleAuthorization  = "inference-access"
)

// AuthorizationHeader is the header that carries a caller's bearer token:
// the gateway reads it, and the route drops it before the request goes on
// to the model server (stripCredentials).
const AuthorizationHeader = "Authorization"

// serviceAuth renders, while auth is on, the Kuadrant AuthPolicy of each of
// the service's routes: the managed route's is <service>-kserve-route-authn,
// as ODH names it; each route of the user's own (route.http.refs, in the
// service's namespace) gets <route>-authn, one policy per route however
// many services name it. Their rules, more specific than the gateway's
// default deny, replace it for that route (docs/auth.md).
//
// A protected service's policy lets a request through only with a bearer
// token that a TokenReview accepts for Options.AuthAudiences and whose
// user, with its groups, may get this LLMInferenceService: the
// SubjectAccessReview names the service by its literal namespace and name,
// never by parsing the request, so every path and header rule of the
// route is decided against the service that serves it. A service opened
// with convention.AnnotationEnableAuth "false" gets an anonymous policy
// instead.
func (b *builder) serviceAuth() error {
	if !b.opts.Auth {
		return nil
	}
	policy := b.protectedPolicy
	if AuthDisabled(b.svc.Annotations) {
		policy = b.anonymousPolicy
	}
	if b.builtIn("gateway.networking.k8s.io", "HTTPRoute", b.names.route) {
		b.add(policy(b.names.routeAuth, b.names.route))
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
		b.add(policy(name, ref.Name))
	}
	return nil
}

// RouteRefAuthPolicySuffix names the AuthPolicy of a route of the user's
// own: <route>-authn.
const RouteRefAuthPolicySuffix = "-authn"

// anonymousPolicy is an AuthPolicy named name that lets anyone through the
// HTTPRoute route.
func (b *builder) anonymousPolicy(name, route string) Object {
	return b.routePolicy(name, route, map[string]any{
		"authentication": map[string]any{
			"public": map[string]any{"anonymous": map[string]any{}},
		},
	})
}

// protectedPolicy is an AuthPolicy named name that lets through the
// HTTPRoute route only the callers that may get this service.
func (b *builder) protectedPolicy(name, route string) Object {
	audiences := make([]any, 0, len(b.opts.AuthAudiences))
	for _, a := range b.opts.AuthAudiences {
		audiences = append(audiences, a)
	}
	value := func(v string) map[string]any { return map[string]any{"value": v} }
	return b.routePolicy(name, route, map[string]any{
		"authentication": map[string]any{
			AuthRuleAuthentication: map[string]any{
				"credentials":           map[string]any{"authorizationHeader": map[string]any{"prefix": "Bearer"}},
				"kubernetesTokenReview": map[string]any{"audiences": audiences},
			},
		},
		"authorization": map[string]any{
			AuthRuleAuthorization: map[string]any{
				"kubernetesSubjectAccessReview": map[string]any{
					"user":                map[string]any{"expression": "auth.identity.user.username"},
					"authorizationGroups": map[string]any{"expression": "auth.identity.user.groups"},
					"resourceAttributes": map[string]any{
						"group":     value(v1alpha2.GroupVersion.Group),
						"resource":  value("llminferenceservices"),
						"namespace": value(b.svc.Namespace),
						"name":      value(b.svc.Name),
						"verb":      value("get"),
					},
				},
			},
		},
	})
}

// routePolicy is an AuthPolicy named name on the HTTPRoute route with
// rules.
func (b *builder) routePolicy(name, route string, rules map[string]any) Object {
	return b.custom(convention.KuadrantGroup+"/v1", "AuthPolicy", name, ComponentAuth, map[string]any{
		"targetRef": map[string]any{
			"group": "gateway.networking.k8s.io",
			"kind":  "HTTPRoute",
			"name":  route,
		},
		"rules": rules,
	})
}

// stripCredentials makes each rule of the managed route drop the caller's
// Authorization header before the request goes upstream, while auth is
// on: the gateway has checked it, and the model server, whose image the
// service's author chooses, must not get a replayable cluster credential.
// A rule's RequestHeaderModifier gets the header added to its remove list;
// a rule without one gets one. Envoy applies the route's header changes
// when the router forwards the request, after ext_authz (Authorino) and
// ext_proc (the endpoint picker) saw the request as the caller sent it
// (docs/auth.md, "Credentials stop at the gateway").
func (b *builder) stripCredentials(rules []gatewayv1.HTTPRouteRule) error {
	if !b.opts.Auth {
		return nil
	}
	return dropAuthorization(rules)
}

// dropAuthorization makes each rule remove the Authorization header from
// the request before it goes upstream (stripCredentials; a MaaS route's
// rules always, maasRoute).
func dropAuthorization(rules []gatewayv1.HTTPRouteRule) error {
	for i := range rules {
		at := slices.IndexFunc(rules[i].Filters, func(f gatewayv1.HTTPRouteFilter) bool {
			return f.Type == gatewayv1.HTTPRouteFilterRequestHeaderModifier
		})
		if at < 0 {
			rules[i].Filters = append(rules[i].Filters, gatewayv1.HTTPRouteFilter{
				Type:                  gatewayv1.HTTPRouteFilterRequestHeaderModifier,
				RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Remove: []string{AuthorizationHeader}},
			})
			continue
		}
		f := rules[i].Filters[at].RequestHeaderModifier
		if f == nil {
			f = &gatewayv1.HTTPHeaderFilter{}
			rules[i].Filters[at].RequestHeaderModifier = f
		}
		if slices.ContainsFunc(f.Remove, func(h string) bool { return strings.EqualFold(h, AuthorizationHeader) }) {
			continue
		}
		if len(f.Remove) >= maxHeaderRemovals {
			return fmt.Errorf("spec.router.route.http.spec.rules[%d].filters[%d].requestHeaderModifier.remove: %d headers, "+
				"the most Gateway API allows, and auth needs %s removed too", i, at, len(f.Remove), AuthorizationHeader)
		}
		f.Remove = append(f.Remove, AuthorizationHeader)
	}
	return nil
}

// maxHeaderRemovals is Gateway API's limit on a header filter's remove
// list (the CRD's maxItems).
const maxHeaderRemovals = 16

// AuthDisabled reports whether a service's annotations open it to
// anonymous callers: convention.AnnotationEnableAuth "false", in any case.
// Anything else, or nothing, keeps it protected.
func AuthDisabled(annotations map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(annotations[convention.AnnotationEnableAuth]), "false")
}
