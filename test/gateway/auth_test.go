package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/test/authpolicy"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// renderedPolicies are the AuthPolicies odh-serving renders, from the
// goldens: the chart's with auth on (the gateway's default deny) and with
// MaaS on, and the engine's for a protected service's route and the
// anonymous one for a service opened with enable-auth "false".
func renderedPolicies(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, file := range []string{"../chart/testdata/odh-serving/auth.yaml", "../chart/testdata/odh-serving/maas.yaml", "../../engine/testdata/auth-anonymous/expected.yaml"} {
		for _, d := range testenv.Documents(t, file) {
			if d.Object.GetKind() == "AuthPolicy" {
				out[d.Object.GetName()] = d.Object
			}
		}
	}
	for _, name := range []string{"kserve-ingress-gateway-authn", "closed-kserve-route-authn", "open-kserve-route-authn", "maas-gateway-auth", "maas-default-deny", "odh-serving-maas-api"} {
		if out[name] == nil {
			t.Fatalf("no AuthPolicy %s in the goldens", name)
		}
	}
	return out
}

// retarget is a copy of policy, in namespace and named name (when not
// empty), with targetRef fields set.
func retarget(policy *unstructured.Unstructured, namespace, name string, ref map[string]string) *unstructured.Unstructured {
	out := policy.DeepCopy()
	if namespace != "" {
		out.SetNamespace(namespace)
	}
	if name != "" {
		out.SetName(name)
	}
	for k, v := range ref {
		_ = unstructured.SetNestedField(out.Object, v, "spec", "targetRef", k)
	}
	return out
}

func httpRoute(namespace, name string) *gatewayv1.HTTPRoute {
	return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// TestEffectivePolicy picks, among the rendered policies, the one Kuadrant
// enforces on a request's path: a route's own policy over its gateway's
// default deny (a protected service's, the anonymous per-service policy,
// the API server's route on the MaaS gateway), a listener's over its
// Gateway's (the MaaS policy over the default-deny), an override over
// everything, the oldest among equals.
func TestEffectivePolicy(t *testing.T) {
	p := renderedPolicies(t)
	ingress := types.NamespacedName{Namespace: "opendatahub", Name: "kserve-ingress-gateway"}
	maas := types.NamespacedName{Namespace: "openshift-ingress", Name: "maas-default-gateway"}
	at := func(gw types.NamespacedName, listener string, rt *gatewayv1.HTTPRoute) AuthTarget {
		return AuthTarget{Gateway: gw, Listener: gatewayv1.SectionName(listener), Route: rt, Rule: &gatewayv1.HTTPRouteRule{Name: ptr.To(gatewayv1.SectionName("rule-0"))}}
	}
	// An override on the ingress gateway, and policies that target
	// nothing on the path: another namespace, another gateway, another
	// listener, another rule.
	override := retarget(p["kserve-ingress-gateway-authn"], "", "locked-down", nil)
	rules, _, _ := unstructured.NestedMap(override.Object, "spec", "defaults", "rules")
	unstructured.RemoveNestedField(override.Object, "spec", "defaults")
	if err := unstructured.SetNestedMap(override.Object, map[string]any{"rules": rules}, "spec", "overrides"); err != nil {
		t.Fatal(err)
	}
	elsewhere := retarget(p["open-kserve-route-authn"], "team-b", "elsewhere", nil)
	otherListener := retarget(p["maas-gateway-auth"], "", "other-listener", map[string]string{"sectionName": "https"})
	otherRule := retarget(p["open-kserve-route-authn"], "", "other-rule", map[string]string{"sectionName": "rule-1"})
	// Two policies on one route: the older wins.
	older := retarget(p["open-kserve-route-authn"], "", "z-older", map[string]string{"name": "twins-kserve-route"})
	older.SetCreationTimestamp(metav1.NewTime(time.Unix(1000, 0)))
	younger := retarget(p["open-kserve-route-authn"], "", "a-younger", map[string]string{"name": "twins-kserve-route"})
	younger.SetCreationTimestamp(metav1.NewTime(time.Unix(2000, 0)))

	base := []*unstructured.Unstructured{p["kserve-ingress-gateway-authn"], p["closed-kserve-route-authn"], p["open-kserve-route-authn"], p["maas-gateway-auth"], p["maas-default-deny"],
		p["odh-serving-maas-api"], elsewhere, otherListener, otherRule, older, younger}
	for _, c := range []struct {
		what   string
		at     AuthTarget
		extra  []*unstructured.Unstructured
		want   string
		errHas string
	}{
		{what: "a protected service's route: its own policy", at: at(ingress, "http", httpRoute("team-a", "closed-kserve-route")), want: "closed-kserve-route-authn"},
		{what: "a route no service's policy covers: the gateway's default deny", at: at(ingress, "http", httpRoute("team-b", "rogue")), want: "kserve-ingress-gateway-authn"},
		{what: "an opened service's route: its anonymous policy", at: at(ingress, "http", httpRoute("team-a", "open-kserve-route")), want: "open-kserve-route-authn"},
		{what: "a route of the same name elsewhere: the gateway's", at: at(ingress, "http", httpRoute("team-c", "open-kserve-route")), want: "kserve-ingress-gateway-authn"},
		{what: "the MaaS listener: its default-deny over the gateway's", at: at(maas, "http", httpRoute("team-a", "chat-kserve-route")), want: "maas-gateway-auth"},
		{what: "another listener of the MaaS gateway: the default-deny", at: at(maas, "other", httpRoute("team-a", "chat-kserve-route")), want: "maas-default-deny"},
		{what: "the API server's route on the MaaS gateway: its own", at: at(maas, "http", httpRoute("opendatahub", "odh-serving-maas-api")), want: "odh-serving-maas-api"},
		{what: "two policies on a route: the older", at: at(ingress, "http", httpRoute("team-a", "twins-kserve-route")), want: "z-older"},
		{what: "a gateway nobody protects", at: at(types.NamespacedName{Namespace: "x", Name: "open"}, "http", httpRoute("team-a", "chat")), want: ""},
		{what: "an override on the gateway beats the route's own", at: at(ingress, "http", httpRoute("team-a", "open-kserve-route")),
			extra: []*unstructured.Unstructured{override}, want: "locked-down"},
	} {
		var list []unstructured.Unstructured
		for _, o := range append(base, c.extra...) {
			list = append(list, *o)
		}
		got, err := EffectivePolicy(list, c.at)
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		name := ""
		if got != nil {
			name = got.GetName()
		}
		if name != c.want {
			t.Errorf("%s: %q, want %q", c.what, name, c.want)
		}
	}

	// What the gateway does not model is an error, never a guess.
	merge := p["kserve-ingress-gateway-authn"].DeepCopy()
	_ = unstructured.SetNestedField(merge.Object, "merge", "spec", "defaults", "strategy")
	if _, err := EffectivePolicy([]unstructured.Unstructured{*merge}, at(ingress, "http", httpRoute("a", "b"))); err == nil || !strings.Contains(err.Error(), "merge") {
		t.Errorf("the merge strategy: %v, want an error naming it", err)
	}
}

// TestGatewayEnforcesDefaultDeny serves routes on the MaaS gateway with
// the chart's rendered default-deny policy on it: a route no other policy
// covers is refused (403, the policy's message) before any backend is
// reached; a route with the engine's anonymous policy is served; a route
// whose policy the test tooling cannot apply (the MaaS listener policy's
// tier lookup) fails closed with 500. None of these asks the API server,
// so the reviewer has no client.
func TestGatewayEnforcesDefaultDeny(t *testing.T) {
	p := renderedPolicies(t)
	w := newWorld(t, time.Millisecond)
	w.pod("ready", true, map[string]string{"app": "a"})
	w.service("svc", map[string]string{"app": "a"})
	w.route(
		gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{{Path: prefix("/team/svc")}}, Filters: []gatewayv1.HTTPRouteFilter{rewriteTo("/")},
			BackendRefs: []gatewayv1.HTTPBackendRef{backendRef("", "", "svc", 1)}},
	)
	// The policies, moved to the test's Gateway gw/gateway and route
	// team/route.
	deny := retarget(p["maas-default-deny"], "gw", "", map[string]string{"name": "gateway"})
	open := retarget(p["open-kserve-route-authn"], "team", "", map[string]string{"name": "route"})
	listener := retarget(p["maas-gateway-auth"], "gw", "", map[string]string{"name": "gateway"})

	serve := func(policies ...*unstructured.Unstructured) string {
		t.Helper()
		s := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(s); err != nil {
			t.Fatal(err)
		}
		s.AddKnownTypeWithName(AuthPolicyGVK, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(AuthPolicyGVK.GroupVersion().WithKind("AuthPolicyList"), &unstructured.UnstructuredList{})
		objs := make([]client.Object, 0, len(policies))
		for _, o := range policies {
			objs = append(objs, o)
		}
		reader := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
		return w.serve(Options{Authorizer: AuthPolicies{Reader: reader, Reviewer: authpolicy.Authorizer{}}})
	}

	url := serve(deny)
	code, hdr, body := send(t, url+"/team/svc/v1/completions", completion)
	if code != http.StatusForbidden || strings.TrimSpace(body) != "no MaaS policy covers this route" || hdr.Get("X-Model-Server-Pod") != "" {
		t.Errorf("the default-deny alone: %d %q from pod %q; want 403 with the policy's message, from no pod", code, body, hdr.Get("X-Model-Server-Pod"))
	}
	if got := hdr.Get(AuthPolicyHeader); got != "gw/maas-default-deny" {
		t.Errorf("refused by %q, want gw/maas-default-deny", got)
	}

	url = serve(deny, open)
	if code, hdr, body := send(t, url+"/team/svc/v1/completions", completion); code != http.StatusOK || hdr.Get("X-Model-Server-Pod") != "ready" {
		t.Errorf("the route's anonymous policy over the default-deny: %d from pod %q: %s", code, hdr.Get("X-Model-Server-Pod"), body)
	}

	// The MaaS listener's own default denies too (each MaaS route brings
	// the policy that lets its callers in).
	url = serve(deny, listener)
	if code, hdr, body := send(t, url+"/team/svc/v1/completions", completion); code != http.StatusForbidden ||
		strings.TrimSpace(body) != "no MaaS route's policy covers this request" || hdr.Get(AuthPolicyHeader) != "gw/maas-gateway-auth" {
		t.Errorf("the listener's default-deny: %d %q by %q; want 403 by gw/maas-gateway-auth", code, body, hdr.Get(AuthPolicyHeader))
	}
	// A policy the test gateway cannot apply fails closed with 500.
	unknown := retarget(open, "", "", nil)
	_ = unstructured.SetNestedField(unknown.Object, map[string]any{"x": map[string]any{"uma": map[string]any{}}}, "spec", "rules", "metadata")
	url = serve(deny, unknown)
	if code, _, body := send(t, url+"/team/svc/v1/completions", completion); code != http.StatusInternalServerError || !strings.Contains(body, `unknown field "uma"`) {
		t.Errorf("a policy the test gateway cannot apply: %d %s; want 500 naming the rule", code, body)
	}
}
