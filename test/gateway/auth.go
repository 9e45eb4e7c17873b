package gateway

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/test/authpolicy"
)

// Authorizer decides, for a request the gateway matched to a route, whether
// it goes on to a backend: the place where Envoy calls Authorino.
type Authorizer interface {
	Authorize(ctx context.Context, req *http.Request, at AuthTarget) (Verdict, error)
}

// AuthTarget is where a request goes: the Gateway and listener that took
// it, and the route and rule it matched.
type AuthTarget struct {
	Gateway  types.NamespacedName
	Listener gatewayv1.SectionName
	Route    *gatewayv1.HTTPRoute
	Rule     *gatewayv1.HTTPRouteRule
}

// Verdict is an Authorizer's answer.
type Verdict struct {
	// Code is 200 to let the request through, otherwise the status to
	// answer with (401, 403).
	Code int
	// Policy is the AuthPolicy (namespace/name) that decided; empty when
	// none applies.
	Policy string
	// Reason says why a request was refused; Message is the policy's own
	// denial message, if it has one.
	Reason, Message string
}

// AuthPolicyGVK is Kuadrant's AuthPolicy.
var AuthPolicyGVK = schema.GroupVersionKind{Group: "kuadrant.io", Version: "v1", Kind: "AuthPolicy"}

// AuthPolicies is an Authorizer that enforces Kuadrant AuthPolicies, as
// far as test tooling models Kuadrant (docs/auth.md, "The test gateway"):
// the one policy in effect on the request's path (EffectivePolicy), its
// rules applied by test/authpolicy with the API server's TokenReview and
// SubjectAccessReview. Without a policy, or without the AuthPolicy CRD,
// the request goes through, as on a gateway Kuadrant does not protect.
type AuthPolicies struct {
	// Reader lists AuthPolicies (the gateway's cache).
	Reader client.Reader
	// Reviewer sends the reviews; its client needs create on
	// tokenreviews and subjectaccessreviews, as Authorino's does.
	Reviewer authpolicy.Authorizer
}

// Authorize applies the policy in effect on at to req.
func (a AuthPolicies) Authorize(ctx context.Context, req *http.Request, at AuthTarget) (Verdict, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(AuthPolicyGVK.GroupVersion().WithKind(AuthPolicyGVK.Kind + "List"))
	if err := a.Reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return Verdict{Code: http.StatusOK}, nil
		}
		return Verdict{}, fmt.Errorf("list AuthPolicies: %w", err)
	}
	policy, err := EffectivePolicy(list.Items, at)
	if err != nil || policy == nil {
		return Verdict{Code: http.StatusOK}, err
	}
	name := policy.GetNamespace() + "/" + policy.GetName()
	rules, err := authpolicy.Parse(policy)
	if err != nil {
		return Verdict{}, err
	}
	headers := map[string]string{}
	for k, v := range req.Header {
		headers[strings.ToLower(k)] = v[0]
	}
	d, err := a.Reviewer.Check(ctx, rules, authpolicy.Request{Method: req.Method, Path: req.URL.Path, Headers: headers})
	if err != nil {
		return Verdict{}, fmt.Errorf("AuthPolicy %s: %w", name, err)
	}
	return Verdict{Code: d.Code, Policy: name, Reason: d.Reason, Message: d.Message}, nil
}

// Levels of a policy's target, from the least specific.
const (
	levelGateway = iota
	levelListener
	levelRoute
	levelRule
)

// attached is a policy that applies to a request's path, at a level.
type attached struct {
	policy   *unstructured.Unstructured
	level    int
	override bool
}

// EffectivePolicy is the AuthPolicy in effect for a request that took at,
// or nil: of the policies targeting the Gateway, the listener (sectionName),
// the route or the route's rule (sectionName) in their own namespace,
//
//   - an override (spec.overrides) beats every default, and the least
//     specific override wins;
//   - otherwise the most specific default (spec.defaults, or spec.rules:
//     implicit defaults) wins;
//   - among policies on one target, the oldest wins, then by
//     namespace/name.
//
// The winner's rules replace the others whole (Kuadrant's atomic
// strategy). A policy with the merge strategy or with when conditions is
// an error: the test gateway does not model them.
func EffectivePolicy(policies []unstructured.Unstructured, at AuthTarget) (*unstructured.Unstructured, error) {
	var found []attached
	for i := range policies {
		p := &policies[i]
		level, ok := targetLevel(p, at)
		if !ok {
			continue
		}
		what := fmt.Sprintf("%s %s/%s", p.GetKind(), p.GetNamespace(), p.GetName())
		_, override, _ := unstructured.NestedMap(p.Object, "spec", "overrides")
		for _, block := range []string{"defaults", "overrides"} {
			if s, _, _ := unstructured.NestedString(p.Object, "spec", block, "strategy"); s != "" && s != "atomic" {
				return nil, fmt.Errorf("%s: spec.%s.strategy %s: the test gateway applies the atomic strategy only", what, block, s)
			}
			if _, ok, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", block, "when"); ok {
				return nil, fmt.Errorf("%s: spec.%s.when: not applied by the test gateway", what, block)
			}
		}
		if _, ok, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "when"); ok {
			return nil, fmt.Errorf("%s: spec.when: not applied by the test gateway", what)
		}
		found = append(found, attached{policy: p, level: level, override: override})
	}
	if len(found) == 0 {
		return nil, nil
	}
	overrides := slices.ContainsFunc(found, func(a attached) bool { return a.override })
	found = slices.DeleteFunc(found, func(a attached) bool { return a.override != overrides })
	best := slices.MinFunc(found, func(a, b attached) int {
		if a.level != b.level {
			if overrides {
				return a.level - b.level
			}
			return b.level - a.level
		}
		ta, tb := a.policy.GetCreationTimestamp(), b.policy.GetCreationTimestamp()
		if !ta.Equal(&tb) {
			if ta.Before(&tb) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.policy.GetNamespace()+"/"+a.policy.GetName(), b.policy.GetNamespace()+"/"+b.policy.GetName())
	})
	return best.policy, nil
}

// targetLevel says whether a policy's targetRef is on the request's path,
// and at which level.
func targetLevel(p *unstructured.Unstructured, at AuthTarget) (int, bool) {
	ref, _, _ := unstructured.NestedStringMap(p.Object, "spec", "targetRef")
	if ref["group"] != gatewayv1.GroupName {
		return 0, false
	}
	section := ref["sectionName"]
	switch ref["kind"] {
	case "Gateway":
		if p.GetNamespace() != at.Gateway.Namespace || ref["name"] != at.Gateway.Name {
			return 0, false
		}
		if section == "" {
			return levelGateway, true
		}
		return levelListener, section == string(at.Listener)
	case "HTTPRoute":
		if at.Route == nil || p.GetNamespace() != at.Route.Namespace || ref["name"] != at.Route.Name {
			return 0, false
		}
		if section == "" {
			return levelRoute, true
		}
		return levelRule, at.Rule != nil && at.Rule.Name != nil && section == string(*at.Rule.Name)
	}
	return 0, false
}

// authorize asks the Authorizer, if there is one, and answers a refused
// request; false when the request does not go on.
func (r *Router) authorize(w http.ResponseWriter, req *http.Request, at AuthTarget) bool {
	if r.opts.Authorizer == nil {
		return true
	}
	v, err := r.opts.Authorizer.Authorize(req.Context(), req, at)
	if err != nil {
		// Fail closed: a policy the gateway cannot apply lets nothing
		// through.
		r.fail(w, http.StatusInternalServerError, "HTTPRoute %s/%s: authorize: %v", at.Route.Namespace, at.Route.Name, err)
		return false
	}
	if v.Code == http.StatusOK {
		return true
	}
	if v.Code == 0 {
		r.fail(w, http.StatusInternalServerError, "HTTPRoute %s/%s: the authorizer gave no status", at.Route.Namespace, at.Route.Name)
		return false
	}
	// As Authorino: the reason in a header, a challenge with a 401.
	w.Header().Set("X-Ext-Auth-Reason", v.Reason)
	w.Header().Set(AuthPolicyHeader, v.Policy)
	if v.Code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+v.Policy+`"`)
	}
	body := cmp.Or(v.Message, fmt.Sprintf("%s by AuthPolicy %s: %s", http.StatusText(v.Code), v.Policy, v.Reason))
	http.Error(w, body, v.Code)
	return false
}

// AuthPolicyHeader names, on a refused request's answer, the AuthPolicy
// that refused it (test tooling: Authorino does not say).
const AuthPolicyHeader = "X-Test-Gateway-Authpolicy"

var _ Authorizer = AuthPolicies{}
