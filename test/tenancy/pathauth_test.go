package tenancy

import (
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/opendatahub-io/odh-serving/engine/build"
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
