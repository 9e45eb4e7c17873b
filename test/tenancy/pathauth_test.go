package tenancy

import (
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/test/gateway"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestPathsAuthorizedAgainstTheService attacks the authorization of every
// path and header rule team-a's service serves (issue #32, item 1). The
// gateway used to take the service's namespace and name from the path
// (request.path.split("/")[1] and [2]): the publisher path
// /publishers/team-a/models/<model>/... was authorized as the service
// "team-a" in the namespace "publishers", the model-header path
// /v1/chat/completions as "chat" in "v1", and the header rule that matches
// any path as whatever the path names. So whoever may get services in a
// namespace named publishers (or v1, or their own namespace) called
// team-a's model, and team-a's rightful callers were ok on those
// paths. Each request here must be decided against team-a/qwen itself.
func TestPathsAuthorizedAgainstTheService(t *testing.T) {
	h := New(t)
	h.Deploy(t, Service(TeamA, "qwen", map[string]string{build.AnnotationModelBasedRouting: "true"}), h.Options())

	rightful := types.NamespacedName{Namespace: TeamA, Name: "caller"}
	h.Grant(t, TeamA, "qwen", rightful)
	// Attackers: each may get every service in a namespace of its own,
	// and nothing in team-a.
	publishers := types.NamespacedName{Namespace: "publishers", Name: "reader"}
	v1 := types.NamespacedName{Namespace: "v1", Name: "reader"}
	teamB := types.NamespacedName{Namespace: TeamB, Name: "owner"}
	for _, sa := range []types.NamespacedName{publishers, v1, teamB} {
		h.Token(t, sa) // makes the namespace and the ServiceAccount
		h.Grant(t, sa.Namespace, "", sa)
	}
	header := map[string]string{build.ModelHeader: build.PublisherName(TeamA, Model)}
	publisherPath := "/publishers/team-a/models/" + Model + "/v1/chat/completions"

	for _, c := range []struct {
		what   string
		caller types.NamespacedName
		path   string
		header map[string]string
		want   int
	}{
		{"the publisher path, from a reader of namespace publishers", publishers, publisherPath, nil, http.StatusForbidden},
		{"the publisher path, from team-a's caller", rightful, publisherPath, nil, http.StatusOK},
		{"the model header, from a reader of namespace v1", v1, "/v1/chat/completions", header, http.StatusForbidden},
		{"the model header, from team-a's caller", rightful, "/v1/chat/completions", header, http.StatusOK},
		{"the model header on a path naming team-b's own service, from team-b", teamB, "/team-b/anything/v1/chat/completions", header, http.StatusForbidden},
		{"team-a's own path, from a reader of namespace publishers", publishers, "/team-a/qwen/v1/chat/completions", nil, http.StatusForbidden},
		{"team-a's own path, from team-a's caller", rightful, "/team-a/qwen/v1/chat/completions", nil, http.StatusOK},
	} {
		r := h.Send(t, Request{Path: c.path, Token: h.Token(t, c.caller), Header: c.header})
		ok := r.Code == c.want && r.Pod() == ""
		if c.want == http.StatusOK {
			ok = r.Code == c.want && r.Pod() != ""
		}
		if !ok {
			t.Errorf("%s (%s): %s; want %d", c.what, c.path, r, c.want)
		}
	}
}

// TestUncoveredRouteRefused attacks what no service's policy covers (issue
// #32, item 1): an HTTPRoute a tenant applies on the shared ingress
// Gateway itself, without an AuthPolicy, and a service's route whose
// policy is gone (deleted, or not yet applied). The gateway's policy used
// to authorize such a route by the path it serves, so a team-b member
// whose route serves /team-b/<anything>/... reached team-b's pods without
// any service's policy; now the gateway's policy is a default deny: 403
// with its message, for anyone, before any pod.
func TestUncoveredRouteRefused(t *testing.T) {
	h := New(t)
	d := h.Deploy(t, Service(TeamB, "mine", nil), h.Options())
	owner := types.NamespacedName{Namespace: TeamB, Name: "owner"}
	h.Grant(t, TeamB, "", owner)
	token := h.Token(t, owner)

	// team-b's own route to its own workload Service, no policy of its own.
	rogue := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: TeamB, Name: "rogue"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Name: gatewayv1.ObjectName(h.Ingress.Name), Namespace: ptr(gatewayv1.Namespace(h.Ingress.Namespace)),
			}}},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr(gatewayv1.PathMatchPathPrefix), Value: ptr("/team-b/free")}}},
				Filters: []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterURLRewrite, URLRewrite: &gatewayv1.HTTPURLRewriteFilter{
					Path: &gatewayv1.HTTPPathModifier{Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr("/")},
				}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
					Name: gatewayv1.ObjectName(d.Result.Names.WorkloadService), Port: ptr(gatewayv1.PortNumber(8000)),
				}}}},
			}},
		},
	}
	h.Create(t, rogue)
	h.waitCached(t, rogue)
	gatewayPolicy := h.Ingress.Namespace + "/" + h.Ingress.Name + "-authn"
	refusedByDefault := func(what string, r Response) {
		t.Helper()
		if r.Code != http.StatusForbidden || r.Pod() != "" || r.Header.Get(gateway.AuthPolicyHeader) != gatewayPolicy {
			t.Errorf("%s: %s; want 403 from the gateway's default deny %s, no pod", what, r, gatewayPolicy)
		}
	}
	refusedByDefault("team-b's own route without a policy, team-b's token", h.Send(t, Request{Path: "/team-b/free/v1/chat/completions", Token: token}))
	refusedByDefault("team-b's own route without a policy, no token", h.Send(t, Request{Path: "/team-b/free/v1/chat/completions"}))

	// A service's route whose own policy is gone: its rightful caller is
	// refused by the default deny, never let through unchecked.
	path := "/team-b/mine/v1/chat/completions"
	if r := h.Send(t, Request{Path: path, Token: token}); r.Code != http.StatusOK || r.Pod() == "" {
		t.Fatalf("%s with its policy: %s; want 200 from a pod", path, r)
	}
	for i, o := range d.Result.Objects {
		if d.Result.Children[i].Role == engine.RoleAuth {
			if err := h.C.Delete(t.Context(), o.DeepCopyObject().(client.Object)); err != nil {
				t.Fatal(err)
			}
		}
	}
	testenv.Eventually(t, "the route without its policy refused by the default deny", func() error {
		if r := h.Send(t, Request{Path: path, Token: token}); r.Code != http.StatusForbidden || r.Pod() != "" {
			return fmt.Errorf("%s", r)
		}
		return nil
	})
	refusedByDefault(path+" without its policy", h.Send(t, Request{Path: path, Token: token}))
}
