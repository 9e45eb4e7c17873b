package tenancy

import (
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestHarness checks the harness itself on the paths every version
// protected: team-a's service answers a caller granted get on it, and
// refuses a request without a token (401) and a token of team-b's
// without a grant (403), none of which reaches a pod. An attack test that
// passes on a harness that lets nothing through, or everything, proves
// nothing.
func TestHarness(t *testing.T) {
	h := New(t)
	d := h.Deploy(t, Service(TeamA, "qwen", nil), h.Options())
	caller := types.NamespacedName{Namespace: TeamA, Name: "caller"}
	h.Grant(t, TeamA, "qwen", caller)
	path := "/team-a/qwen/v1/chat/completions"

	if r := h.Send(t, Request{Path: path, Token: h.Token(t, caller)}); r.Code != http.StatusOK || "team-a/"+r.Pod() != d.Pods[0] {
		t.Errorf("the granted caller on %s: %s; want 200 from %s", path, r, d.Pods[0])
	}
	stranger := h.Token(t, types.NamespacedName{Namespace: TeamB, Name: "stranger"})
	for _, c := range []struct {
		what  string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the API server does not accept", "not-a-token", http.StatusUnauthorized},
		{"team-b's token without a grant", stranger, http.StatusForbidden},
	} {
		if r := h.Send(t, Request{Path: path, Token: c.token}); r.Code != c.want || r.Pod() != "" {
			t.Errorf("%s on %s: %s; want %d from the gateway", c.what, path, r, c.want)
		}
	}
}
