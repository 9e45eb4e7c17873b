package gateway

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// renderedRateLimit is the chart's RateLimitPolicy on the route to the
// MaaS API server (the maas golden), moved to the test's route team/route
// with limit requests per window.
func renderedRateLimit(t *testing.T, limit int64, window string) *unstructured.Unstructured {
	t.Helper()
	for _, d := range testenv.Documents(t, "../chart/testdata/odh-serving/maas.yaml") {
		if d.Object.GetKind() != "RateLimitPolicy" || d.Object.GetName() != "odh-serving-maas-api" {
			continue
		}
		p := retarget(d.Object, "team", "", map[string]string{"name": "route"})
		rates := []any{map[string]any{"limit": limit, "window": window}}
		if err := unstructured.SetNestedSlice(p.Object, rates, "spec", "limits", "per-caller-address", "rates"); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Fatal("no RateLimitPolicy odh-serving-maas-api in the maas golden")
	return nil
}

// TestGatewayEnforcesRateLimit serves a route under the chart's
// per-address RateLimitPolicy, as Limitador counts: the first limit
// requests of a window from one address go through, the next are answered
// 429 before any backend sees them, and the window's end lets requests in
// again. A limit the gateway does not model (a when predicate, another
// counter) fails closed with 500.
func TestGatewayEnforcesRateLimit(t *testing.T) {
	w := newWorld(t, time.Millisecond)
	w.pod("ready", true, map[string]string{"app": "a"})
	w.service("svc", map[string]string{"app": "a"})
	w.route(gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{{Path: prefix("/team/svc")}}, Filters: []gatewayv1.HTTPRouteFilter{rewriteTo("/")},
		BackendRefs: []gatewayv1.HTTPBackendRef{backendRef("", "", "svc", 1)}})
	now := time.Unix(1_000_000, 0)
	serve := func(policies ...*unstructured.Unstructured) string {
		t.Helper()
		s := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(s); err != nil {
			t.Fatal(err)
		}
		s.AddKnownTypeWithName(RateLimitPolicyGVK, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(RateLimitPolicyGVK.GroupVersion().WithKind("RateLimitPolicyList"), &unstructured.UnstructuredList{})
		objs := make([]client.Object, 0, len(policies))
		for _, o := range policies {
			objs = append(objs, o)
		}
		limiter := NewRateLimitPolicies(fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build())
		limiter.Now = func() time.Time { return now }
		return w.serve(Options{RateLimiter: limiter})
	}

	const limit = 3
	url := serve(renderedRateLimit(t, limit, "1m"))
	var codes []int
	for range limit + 2 {
		code, hdr, _ := send(t, url+"/team/svc/v1/completions", completion)
		codes = append(codes, code)
		if code == http.StatusTooManyRequests && (hdr.Get(RateLimitHeader) != "team/odh-serving-maas-api" || hdr.Get("X-Model-Server-Pod") != "") {
			t.Errorf("a 429 by %q from pod %q; want team/odh-serving-maas-api, from no pod", hdr.Get(RateLimitHeader), hdr.Get("X-Model-Server-Pod"))
		}
	}
	want := []int{200, 200, 200, 429, 429}
	if !slices.Equal(codes, want) {
		t.Errorf("%d requests in one window from one address: %v, want %v", limit+2, codes, want)
	}
	now = now.Add(time.Minute)
	if code, _, body := send(t, url+"/team/svc/v1/completions", completion); code != http.StatusOK {
		t.Errorf("the next window: %d %s, want 200", code, body)
	}

	for name, edit := range map[string]func(p *unstructured.Unstructured){
		"a when predicate": func(p *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(p.Object, []any{map[string]any{"predicate": "true"}}, "spec", "limits", "per-caller-address", "when")
		},
		"another counter": func(p *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(p.Object, []any{map[string]any{"expression": "source.address"}}, "spec", "limits", "per-caller-address", "counters")
		},
	} {
		p := renderedRateLimit(t, limit, "1m")
		edit(p)
		url := serve(p)
		if code, _, body := send(t, url+"/team/svc/v1/completions", completion); code != http.StatusInternalServerError || !strings.Contains(body, "per-caller-address") && !strings.Contains(body, "when") {
			t.Errorf("%s: %d %s; want 500 naming what is not applied", name, code, body)
		}
	}
}
