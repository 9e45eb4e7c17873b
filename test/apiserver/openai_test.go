package apiserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/opendatahub-io/odh-serving/internal/apiserver"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// openAIList is the answer of GET /v1/models.
type openAIList struct {
	Object string        `json:"object"`
	Data   []openAIModel `json:"data"`
}

type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	Ready   bool   `json:"ready"`
	URL     string `json:"url"`
}

// call sends method path to the api-server's port with token as the bearer
// token (none when empty), body as JSON (none when nil), headers, and cert
// as the client certificate when not nil. It returns the status code and
// the body.
func call(tb testing.TB, method, path, token string, body any, headers map[string]string, cert *tls.Certificate) (int, []byte) {
	tb.Helper()
	h := map[string]string{}
	for k, v := range headers {
		h[k] = v
	}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			tb.Fatal(err)
		}
		h["Content-Type"] = "application/json"
	}
	return send(tb, method, path, bytes.NewReader(raw), cert, h)
}

// openAIModels lists /v1/models with token and returns the ids of the
// models of namespace ns (other tests publish in other namespaces), or the
// failure.
func openAIModels(tb testing.TB, ns, token string, headers map[string]string, cert *tls.Certificate) string {
	tb.Helper()
	code, body := call(tb, http.MethodGet, "/v1/models", token, nil, headers, cert)
	if code != http.StatusOK {
		return fmt.Sprintf("HTTP %d: %s", code, body)
	}
	list := &openAIList{}
	if err := json.Unmarshal(body, list); err != nil {
		tb.Fatalf("/v1/models: %v in %s", err, body)
	}
	var ids []string
	for _, m := range list.Data {
		if m.OwnedBy == ns {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return fmt.Sprint(ids)
}

// maasToken mints a MaaS token for u through tokenrequests.
func maasToken(t *testing.T, u *user) string {
	t.Helper()
	r, err := u.requestToken(t, nil)
	if err != nil {
		t.Fatalf("%s requests a MaaS token: %v", u.name, err)
	}
	return r.Status.Token
}

// openAICallers lets the ServiceAccounts of ns and of the free tier's
// namespace list models and request and revoke tokens (the chart binds
// the same role to every authenticated user), and returns a token of the
// API server's own audience for the ServiceAccount ns/name, made here.
func openAICallers(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := t.Context()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "openai-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "maas-user"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + ns},
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + tierPrefix + "free"},
		},
	}
	if err := cp.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Client.Delete(context.Background(), binding) })
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// TestOpenAIModels: GET /v1/models, as the MaaS gateway sends it, answers
// the caller's tier's models in OpenAI's list format: a premium and a free
// user's MaaS tokens, and a ServiceAccount's token of the API server's own
// audience (free, by system:authenticated).
func TestOpenAIModels(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "openai")
	appToken := openAICallers(t, ns, "app")
	everyone := publish(t, ns, "everyone", tiersJSON())
	publish(t, ns, "free-only", tiersJSON("free"))
	publish(t, ns, "premium-only", tiersJSON("premium"))
	publish(t, ns, "unpublished", "")
	newUser(t, freeUser).waitModels(t, ns, ns+"/everyone", ns+"/free-only")
	alice := maasToken(t, newUser(t, premiumUser, "premium-users"))
	bob := maasToken(t, newUser(t, freeUser))

	for _, tc := range []struct{ who, token, want string }{
		{"alice's premium MaaS token", alice, "[qwen-everyone qwen-premium-only]"},
		{"bob's free MaaS token", bob, "[qwen-everyone qwen-free-only]"},
		{"a ServiceAccount's own token", appToken, "[qwen-everyone qwen-free-only]"},
	} {
		if got := openAIModels(t, ns, tc.token, nil, nil); got != tc.want {
			t.Errorf("%s lists %s, want %s", tc.who, got, tc.want)
		}
	}

	code, body := call(t, http.MethodGet, "/v1/models", alice, nil, nil, nil)
	list := &openAIList{}
	if err := json.Unmarshal(body, list); code != http.StatusOK || err != nil || list.Object != "list" {
		t.Fatalf("/v1/models: %d %s (%v), want an OpenAI list", code, body, err)
	}
	want := openAIModel{
		ID: "qwen-everyone", Object: "model", Created: everyone.CreationTimestamp.Unix(), OwnedBy: ns,
		Ready: true, URL: "https://gw.example.com/" + ns + "/everyone",
	}
	if !slices.Contains(list.Data, want) {
		t.Errorf("/v1/models %s lacks %+v", body, want)
	}
}

// TestOpenAIUnauthenticated: no token, a token the cluster does not know,
// and identity headers without a token are 401, even on the front proxy's
// client certificate: /v1 takes identity from the bearer token alone.
func TestOpenAIUnauthenticated(t *testing.T) {
	proxyCert, err := tls.X509KeyPair(server.frontProxyCert, server.frontProxyKey)
	if err != nil {
		t.Fatal(err)
	}
	forged := map[string]string{
		"X-Remote-User": premiumUser, "X-Remote-Group": "premium-users",
		"X-MaaS-Username": premiumUser, "X-MaaS-Group": `["premium-users"]`,
	}
	for _, tc := range []struct {
		what    string
		method  string
		token   string
		headers map[string]string
		cert    *tls.Certificate
	}{
		{"no token", http.MethodGet, "", nil, nil},
		{"an unknown token", http.MethodGet, "not-a-token", nil, nil},
		{"forged identity headers", http.MethodGet, "", forged, nil},
		{"identity headers on the front proxy's certificate", http.MethodGet, "", forged, &proxyCert},
		{"no token", http.MethodPost, "", nil, nil},
		{"no token", http.MethodDelete, "", nil, nil},
	} {
		path := "/v1/models"
		if tc.method != http.MethodGet {
			path = "/v1/tokens"
		}
		if code, body := call(t, tc.method, path, tc.token, nil, tc.headers, tc.cert); code != http.StatusUnauthorized {
			t.Errorf("%s %s with %s: %d %s, want 401", tc.method, path, tc.what, code, body)
		}
	}
}

// TestOpenAIForgedIdentityHeaders: bob's token with headers that claim
// alice, premium (the request header names, upstream's X-MaaS-* and
// impersonation), directly and on the front proxy's certificate: bob's
// free models. The headers are ignored, not refused.
func TestOpenAIForgedIdentityHeaders(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "openai-forged")
	openAICallers(t, ns, "unused")
	publish(t, ns, "free-only", tiersJSON("free"))
	publish(t, ns, "premium-only", tiersJSON("premium"))
	newUser(t, freeUser).waitModels(t, ns, ns+"/free-only")
	bob := maasToken(t, newUser(t, freeUser))
	forged := map[string]string{
		"X-Remote-User": premiumUser, "X-Remote-Group": "premium-users",
		"X-MaaS-Username": premiumUser, "X-MaaS-Group": `["premium-users"]`,
		"Impersonate-User": premiumUser, "Impersonate-Group": "premium-users",
	}
	proxyCert, err := tls.X509KeyPair(server.frontProxyCert, server.frontProxyKey)
	if err != nil {
		t.Fatal(err)
	}
	for what, cert := range map[string]*tls.Certificate{"directly": nil, "on the front proxy's certificate": &proxyCert} {
		if got := openAIModels(t, ns, bob, forged, cert); got != "[qwen-free-only]" {
			t.Errorf("bob's token with headers claiming alice, %s, lists %s, want bob's [qwen-free-only]", what, got)
		}
	}
}

// tokenResponse is the answer of POST /v1/tokens.
type tokenResponse struct {
	Token      string `json:"token"`
	Expiration string `json:"expiration"`
	ExpiresAt  int64  `json:"expiresAt"`
}

// TestOpenAITokens: POST /v1/tokens mints a MaaS token of the caller's
// tier with upstream's request and response shapes (a duration or a
// number of seconds; {token, expiration, expiresAt}); bad input is 400
// naming it; a MaaS token cannot mint; DELETE /v1/tokens revokes (204) and
// the earlier token stops working.
func TestOpenAITokens(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "openai-tokens")
	appToken := openAICallers(t, ns, "app")
	publish(t, ns, "free-only", tiersJSON("free"))
	newUser(t, freeUser).waitModels(t, ns, ns+"/free-only")

	// Two tokens of the same ServiceAccount. The first is used here, the
	// second only checked with a TokenReview for an audience list no one
	// else asks for: the server and the kube-apiserver each cache a
	// token's authentication for 10 s, by token and audiences, so the
	// first would be accepted for up to 10 s after the revocation below,
	// and the second, which no cache holds, shows the revocation at once.
	var minted []string
	for _, expiration := range []any{"1h", 3600} {
		before := time.Now()
		code, body := call(t, http.MethodPost, "/v1/tokens", appToken, map[string]any{"expiration": expiration}, nil, nil)
		r := &tokenResponse{}
		if err := json.Unmarshal(body, r); code != http.StatusCreated || err != nil || r.Token == "" || r.Expiration != "1h0m0s" {
			t.Fatalf("POST /v1/tokens {expiration: %v}: %d %s, want 201 with a token and expiration 1h0m0s", expiration, code, body)
		}
		if exp := time.Unix(r.ExpiresAt, 0).Sub(before); exp < 59*time.Minute || exp > 61*time.Minute {
			t.Errorf("{expiration: %v}: expiresAt is %s from now, want 1h", expiration, exp)
		}
		minted = append(minted, r.Token)
	}
	used, revoked := minted[0], minted[1]
	sa := "system:serviceaccount:" + tierPrefix + "free:" + apiserver.ServiceAccountName("system:serviceaccount:"+ns+":app")
	if st := tokenReview(t, used, audience); !st.Authenticated || st.User.Username != sa {
		t.Errorf("the minted token: %+v, want %s for %s", st, sa, audience)
	}
	if st := tokenReview(t, revoked, audience, "another-audience"); !st.Authenticated || st.User.Username != sa {
		t.Errorf("the second minted token: %+v, want %s for %s", st, sa, audience)
	}
	if got := openAIModels(t, ns, used, nil, nil); got != "[qwen-free-only]" {
		t.Errorf("the minted token lists %s, want [qwen-free-only]", got)
	}
	code, body := call(t, http.MethodPost, "/v1/tokens", "", nil, nil, nil)
	if code != http.StatusUnauthorized {
		t.Errorf("POST /v1/tokens without a token: %d %s, want 401", code, body)
	}

	for _, tc := range []struct {
		body any
		want string
	}{
		{map[string]any{"expiration": "5m"}, `expiration "5m"`},
		{map[string]any{"expiration": "soon"}, `expiration "soon"`},
		{map[string]any{"expiration": 1.5}, "expiration 1.5"},
		{map[string]any{"expiration": "1h", "name": "app"}, `unknown field "name"`},
	} {
		code, body := call(t, http.MethodPost, "/v1/tokens", appToken, tc.body, nil, nil)
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(body, &e); code != http.StatusBadRequest || err != nil || !strings.Contains(e.Error, tc.want) {
			t.Errorf("POST /v1/tokens %v: %d %s, want 400 naming %s", tc.body, code, body, tc.want)
		}
	}
	code, body = call(t, http.MethodPost, "/v1/tokens", used, map[string]any{"expiration": "1h"}, nil, nil)
	if code != http.StatusForbidden || !strings.Contains(string(body), "a MaaS token cannot request or revoke tokens") {
		t.Errorf("POST /v1/tokens with a MaaS token: %d %s, want 403", code, body)
	}

	code, body = call(t, http.MethodDelete, "/v1/tokens", appToken, nil, nil, nil)
	if code != http.StatusNoContent {
		t.Fatalf("DELETE /v1/tokens: %d %s, want 204", code, body)
	}
	testenv.Eventually(t, "the revoked token is refused", func() error {
		if code, body := call(t, http.MethodGet, "/v1/models", revoked, nil, nil, nil); code != http.StatusUnauthorized {
			return fmt.Errorf("GET /v1/models: %d %s", code, body)
		}
		return nil
	})
}
