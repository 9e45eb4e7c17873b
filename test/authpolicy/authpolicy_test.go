package authpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

// maasPolicy has the shape of a service's MaaS route policy
// (engine/build/maas.go): a metadata call, a pattern and success filters.
const maasPolicy = `
apiVersion: kuadrant.io/v1
kind: AuthPolicy
metadata: {name: chat-kserve-maas-route-authn, namespace: team-a}
spec:
  targetRef: {group: gateway.networking.k8s.io, kind: HTTPRoute, name: chat-kserve-maas-route}
  rules:
    authentication:
      maas-token:
        credentials: {authorizationHeader: {prefix: Bearer}}
        kubernetesTokenReview: {audiences: [maas-default-gateway-sa]}
    metadata:
      tier:
        http:
          url: URL/apis/modelserving.opendatahub.io/v1alpha1/tierreviews
          method: POST
          contentType: application/json
          body: {expression: '{"kind": "TierReview", "spec": {"user": auth.identity.user.username, "groups": auth.identity.user.groups}}'}
          sharedSecretRef: {name: tier-reviewer, key: token}
          credentials: {authorizationHeader: {prefix: Bearer}}
        cache: {key: {expression: auth.identity.user.username}, ttl: 300}
    authorization:
      tier-resolved:
        patternMatching:
          patterns:
          - predicate: has(auth.metadata.tier.status.tier) && auth.metadata.tier.status.tier != ""
      model-access:
        kubernetesSubjectAccessReview:
          user: {expression: auth.identity.user.username}
          authorizationGroups: {expression: auth.identity.user.groups}
          resourceAttributes:
            group: {value: serving.kserve.io}
            resource: {value: llminferenceservices}
            namespace: {value: team-a}
            name: {value: chat}
            verb: {value: post}
    response:
      success:
        filters:
          identity:
            json:
              properties:
                userid: {expression: auth.identity.user.username}
                tier: {expression: auth.metadata.tier.status.tier}
`

// TestMetadataPatternsFilters applies a MaaS-shaped policy with
// Authorino's semantics: the metadata call is a POST of the body
// expression with the shared secret as the bearer token, its JSON answer
// is auth.metadata.tier whatever its status; the predicate denies when it
// is false or cannot be evaluated; the filters export the identity. The
// tier server here stands in for the API server's tierreviews.
func TestMetadataPatternsFilters(t *testing.T) {
	var calls int
	tiers := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer s3cret" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","status":"Failure","reason":"Forbidden"}`))
			return
		}
		var review struct {
			Spec struct {
				User   string   `json:"user"`
				Groups []string `json:"groups"`
			} `json:"spec"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			t.Errorf("tierreviews body: %v", err)
		}
		status := map[string]any{"error": "no tier lists the user's groups"}
		for _, g := range review.Spec.Groups {
			if g == "premium-users" {
				status = map[string]any{"tier": "premium"}
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "TierReview", "status": status})
	}))
	t.Cleanup(tiers.Close)

	policy := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.Replace(maasPolicy, "URL", tiers.URL, 1)), &policy.Object); err != nil {
		t.Fatal(err)
	}
	rules, err := Parse(policy)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]authnv1.UserInfo{
		"premium-token": {Username: "alice", Groups: []string{"premium-users", "system:authenticated"}},
		"free-token":    {Username: "bob", Groups: []string{"system:authenticated"}},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kuadrant-system", Name: "tier-reviewer"}, Data: map[string][]byte{"token": []byte("s3cret")}}
	newAuthorizer := func(objs ...client.Object) Authorizer {
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				switch o := obj.(type) {
				case *authnv1.TokenReview:
					u, ok := users[o.Spec.Token]
					o.Status = authnv1.TokenReviewStatus{Authenticated: ok, User: u}
				case *authzv1.SubjectAccessReview:
					ra := o.Spec.ResourceAttributes
					o.Status.Allowed = ra.Namespace == "team-a" && ra.Name == "chat" && ra.Verb == "post"
				default:
					return c.Create(ctx, obj, opts...)
				}
				return nil
			},
		}).Build()
		return Authorizer{Client: c, SecretNamespace: "kuadrant-system", HTTP: tiers.Client()}
	}
	check := func(a Authorizer, token string) (Decision, error) {
		return a.Check(t.Context(), rules, Request{Method: http.MethodPost, Path: "/team-a/chat/v1/chat/completions",
			Headers: map[string]string{"authorization": "Bearer " + token}})
	}

	a := newAuthorizer(secret)
	d, err := check(a, "premium-token")
	if err != nil || d.Code != http.StatusOK {
		t.Fatalf("premium: %d %s %v, want 200", d.Code, d.Reason, err)
	}
	if got := d.Filters["identity"]; got["tier"] != "premium" || got["userid"] != "alice" {
		t.Errorf("premium: filters %v, want identity {tier: premium, userid: alice}", d.Filters)
	}
	if d, err := check(a, "free-token"); err != nil || d.Code != http.StatusForbidden || !strings.Contains(d.Reason, "tier-resolved") {
		t.Errorf("free: %d %q %v, want 403 by tier-resolved (no tier)", d.Code, d.Reason, err)
	}
	if d, err := check(a, "forged"); err != nil || d.Code != http.StatusUnauthorized || calls != 2 {
		t.Errorf("unknown token: %d %v after %d tier calls, want 401 before any tier call", d.Code, err, calls)
	}

	// The wrong secret: the tier server answers 403 in JSON, which is the
	// metadata (Authorino does not look at the status); the predicate
	// cannot read status.tier from it and denies.
	wrong := secret.DeepCopy()
	wrong.Data["token"] = []byte("not-it")
	if d, err := check(newAuthorizer(wrong), "premium-token"); err != nil || d.Code != http.StatusForbidden ||
		!strings.Contains(d.Reason, "tier-resolved") {
		t.Errorf("wrong secret: %d %q %v, want 403 by tier-resolved", d.Code, d.Reason, err)
	}
	// The tier server unreachable: the call fails, auth.metadata has no
	// tier, and the predicate, which cannot be evaluated, denies.
	down := newAuthorizer(secret)
	down.HTTP = &http.Client{Transport: failingTransport{}}
	if d, err := check(down, "premium-token"); err != nil || d.Code != http.StatusForbidden || d.Metadata["tier"] != nil ||
		!strings.Contains(d.Reason, "no such key") {
		t.Errorf("tier server down: %d %q metadata %v, %v; want 403 by tier-resolved, which cannot read the tier", d.Code, d.Reason, d.Metadata, err)
	}
	// No secret at all: the setup is wrong, an error (the gateway answers 500).
	if _, err := check(newAuthorizer(), "premium-token"); err == nil || !strings.Contains(err.Error(), "sharedSecretRef") {
		t.Errorf("no secret: %v, want an error naming sharedSecretRef", err)
	}
}

// TestParseRefusesWhatItDoesNotApply: the forms of metadata, patterns and
// success responses this package does not evaluate are errors.
func TestParseRefusesWhatItDoesNotApply(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"a selector pattern": {`- predicate: has(auth.metadata.tier.status.tier) && auth.metadata.tier.status.tier != ""`,
			`- {selector: auth.metadata.tier.status.tier, operator: neq, value: ""}`, "only a CEL predicate"},
		"a url expression": {`url: URL/apis/modelserving.opendatahub.io/v1alpha1/tierreviews`, `urlExpression: '"x"'`, "urlExpression"},
		"a PUT":            {`method: POST`, `method: PUT`, "GET or POST"},
		"a selector export": {`userid: {expression: auth.identity.user.username}`, `userid: {selector: auth.identity.user.username}`,
			"selector is not applied"},
		"success headers": {`        filters:`, `        headers: {x: {plain: {value: y}}}
        filters:`, "unknown field"},
	} {
		t.Run(name, func(t *testing.T) {
			text := strings.Replace(maasPolicy, tc.from, tc.to, 1)
			if text == maasPolicy {
				t.Fatalf("%q is not in the policy", tc.from)
			}
			policy := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(text), &policy.Object); err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(policy); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("connection refused")
}
