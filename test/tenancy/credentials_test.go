package tenancy

import (
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// TestCredentialsStopAtTheGateway attacks the caller's credentials (issue
// #32, item 3). A caller's bearer token is a Kubernetes ServiceAccount
// token, good for the API server's audience, and the model server runs an
// image its service's author chose: a pod that receives the token can
// replay it against the API server as the caller. The gateway checks the
// token; the route must drop it before the request goes upstream. The pod
// that answers must not have received the Authorization header, on a
// protected service and on one opened with the enable-auth annotation
// (whose callers may send a token anyway).
func TestCredentialsStopAtTheGateway(t *testing.T) {
	h := New(t)
	h.Deploy(t, Service(TeamA, "qwen", nil), h.Options())
	// The opened service serves a model of its own: two services of a
	// namespace with one model would share the publisher path.
	open := Service(TeamA, "open", map[string]string{convention.AnnotationEnableAuth: "false"})
	open.Spec.Model.Name = ptr("open-model")
	h.Deploy(t, open, h.Options())
	caller := types.NamespacedName{Namespace: TeamB, Name: "caller"}
	h.Grant(t, TeamA, "qwen", caller)
	token := h.Token(t, caller)

	for _, c := range []struct{ path, model string }{
		{"/team-a/qwen/v1/chat/completions", Model},
		{"/publishers/team-a/models/" + Model + "/v1/chat/completions", Model},
		{"/team-a/open/v1/chat/completions", "open-model"},
	} {
		path := c.path
		r := h.Send(t, Request{Path: path, Token: token, Body: chatBody(c.model)})
		if r.Code != http.StatusOK || r.Pod() == "" {
			t.Errorf("%s with the granted caller's token: %s; want 200 from a pod", path, r)
			continue
		}
		got, ok := h.Received(r)
		if !ok {
			t.Errorf("%s: pod %s answered, but no pod recorded the request %s=%s", path, r.Pod(), RequestMarkHeader, r.Mark)
			continue
		}
		if v := got.Header.Values("Authorization"); len(v) > 0 {
			t.Errorf("%s: pod %s received the caller's Authorization header %q", got.Path, got.Pod, v)
		}
	}
}
