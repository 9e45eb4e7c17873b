package security

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/presets"
	"github.com/opendatahub-io/odh-serving/test/authpolicy"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestGatewayAuthPolicyOnTheRealAuthorizer renders the chart with auth on
// and the engine's AuthPolicy of a service's route for the audiences the
// chart's controller takes, and applies them to requests with the API
// server's own TokenReview and SubjectAccessReview (test/authpolicy: the
// review is built from the policy's rules, evaluated on the request, not
// written here). The gateway's policy refuses everyone (a default deny,
// with its message), however granted. The route's policy lets through a
// ServiceAccount granted get on its service, alone or through its group,
// on whatever path the route serves (the publisher path too: the service
// is named literally, not parsed from the path); one without the grant,
// or granted another service, gets 403; no token, or a token for another
// audience, 401. The anonymous AuthPolicy the engine renders for a service
// opened with the enable-auth annotation lets a request without a token
// through.
func TestGatewayAuthPolicyOnTheRealAuthorizer(t *testing.T) {
	ctx := t.Context()
	helm := testenv.HelmFor(t, "helm", "")
	out := helm.Must(t, "template", "odh-serving", "../../charts/odh-serving", "--namespace", "opendatahub",
		"-f", "../../charts/odh-serving/ci/auth-values.yaml")
	gateway := policyRules(t, []byte(out), "opendatahub", "kserve-ingress-gateway-authn")
	audiences := controllerAudiences(t, []byte(out))

	models := testenv.NewNamespace(t, cp.Client, "models")
	clients := testenv.NewNamespace(t, cp.Client, "clients")
	team := testenv.NewNamespace(t, cp.Client, "team")
	// get on the one service, granted to the ServiceAccount allowed and to
	// the group of team's ServiceAccounts.
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: models, Name: "chat-caller"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"serving.kserve.io"}, Resources: []string{"llminferenceservices"}, ResourceNames: []string{"chat"}, Verbs: []string{"get"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: models, Name: "chat-caller"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Namespace: clients, Name: "allowed"},
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + team},
		},
	}
	if err := cp.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := cp.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	chatPolicy := routePolicy(t, models, "chat", audiences)
	otherPolicy := routePolicy(t, models, "other", audiences)
	elsewherePolicy := routePolicy(t, clients, "chat", audiences)
	allowed := token(t, clients, "allowed", audiences)
	denied := token(t, clients, "denied", audiences)
	member := token(t, team, "member", audiences)
	otherAudience := token(t, clients, "allowed", []string{"https://elsewhere.example.com"})

	az := authpolicy.Authorizer{Client: cp.Client}
	chat := "/" + models + "/chat/v1/completions"
	check := func(rules *authpolicy.Rules, path, bearer string) authpolicy.Decision {
		t.Helper()
		req := authpolicy.Request{Method: http.MethodPost, Path: path, Headers: map[string]string{}}
		if bearer != "" {
			req.Headers["authorization"] = "Bearer " + bearer
		}
		d, err := az.Check(ctx, rules, req)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// RBAC's cache takes the new binding a moment after it is created.
	var d authpolicy.Decision
	testenv.Eventually(t, "the granted ServiceAccount is let through", func() error {
		if d = check(chatPolicy, chat, allowed); d.Code != http.StatusOK {
			return fmt.Errorf("%d: %s", d.Code, d.Reason)
		}
		return nil
	})
	if len(d.Reviews) != 1 {
		t.Fatalf("%d SubjectAccessReviews, want the policy's one", len(d.Reviews))
	}
	ra := d.Reviews[0].Spec.ResourceAttributes
	if got, want := fmt.Sprintf("%s %s/%s %s %s/%s", d.Reviews[0].Spec.User, ra.Group, ra.Resource, ra.Verb, ra.Namespace, ra.Name),
		fmt.Sprintf("system:serviceaccount:%s:allowed serving.kserve.io/llminferenceservices get %s/chat", clients, models); got != want {
		t.Errorf("SubjectAccessReview %q, want %q", got, want)
	}
	for _, c := range []struct {
		what   string
		policy *authpolicy.Rules
		path   string
		token  string
		want   int
	}{
		{"through its group", chatPolicy, chat, member, http.StatusOK},
		{"on the publisher path", chatPolicy, "/publishers/" + models + "/models/chat/v1/completions", allowed, http.StatusOK},
		{"on a path naming another service", chatPolicy, "/" + clients + "/other/v1/completions", allowed, http.StatusOK},
		{"without the grant", chatPolicy, chat, denied, http.StatusForbidden},
		{"to another service", otherPolicy, "/" + models + "/other/v1/completions", allowed, http.StatusForbidden},
		{"in another namespace", elsewherePolicy, "/" + clients + "/chat/v1/completions", allowed, http.StatusForbidden},
		{"without a token", chatPolicy, chat, "", http.StatusUnauthorized},
		{"with a token for another audience", chatPolicy, chat, otherAudience, http.StatusUnauthorized},
		{"the gateway's default deny, granted", gateway, chat, allowed, http.StatusForbidden},
		{"the gateway's default deny, without a token", gateway, chat, "", http.StatusForbidden},
	} {
		if d := check(c.policy, c.path, c.token); d.Code != c.want {
			t.Errorf("%s: %d (%s), want %d", c.what, d.Code, d.Reason, c.want)
		}
	}
	if d := check(gateway, chat, allowed); d.Message != "no service policy covers this route" || len(d.Reviews) != 0 {
		t.Errorf("the gateway's default deny: message %q after %d reviews; want its message, no review", d.Message, len(d.Reviews))
	}

	// A service opened with the annotation: its route's own policy.
	open := policyRules(t, golden.Read(t, "../../engine/testdata/auth-anonymous/expected.yaml"), "team-a", "open-kserve-route-authn")
	if d := check(open, "/team-a/open/v1/completions", ""); d.Code != http.StatusOK || len(d.Reviews) != 0 {
		t.Errorf("the anonymous AuthPolicy: %d (%s) with %d reviews, want 200 with none", d.Code, d.Reason, len(d.Reviews))
	}
}

// controllerAudiences are the audiences of the chart's controller
// (--auth-audiences) in a rendered stream.
func controllerAudiences(t *testing.T, stream []byte) []string {
	t.Helper()
	docs, err := manifest.Split("helm template", stream)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if d.Object.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(d.Object.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			args, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
			for _, a := range args {
				if v, ok := strings.CutPrefix(a, "--auth-audiences="); ok {
					return strings.Split(v, ",")
				}
			}
		}
	}
	t.Fatal("the chart with auth on runs no controller with --auth-audiences")
	return nil
}

// routePolicy is the AuthPolicy the engine renders, with auth on for
// audiences, on the managed route of the service namespace/name.
func routePolicy(t *testing.T, namespace, name string, audiences []string) *authpolicy.Rules {
	t.Helper()
	catalog, err := presets.Default(nil)
	if err != nil {
		t.Fatal(err)
	}
	images, err := presets.Images()
	if err != nil {
		t.Fatal(err)
	}
	svc := &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	svc.Spec.Router = &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}}
	res, err := engine.Render(t.Context(), svc, catalog, engine.Options{Images: images, Auth: true, AuthAudiences: audiences})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range res.Objects {
		if res.Children[i].Role == engine.RoleAuth {
			rules, err := authpolicy.Parse(o.(*unstructured.Unstructured))
			if err != nil {
				t.Fatal(err)
			}
			return rules
		}
	}
	t.Fatalf("%s/%s rendered with auth on: no AuthPolicy", namespace, name)
	return nil
}

// policyRules parses the AuthPolicy namespace/name of a YAML stream.
func policyRules(t *testing.T, stream []byte, namespace, name string) *authpolicy.Rules {
	t.Helper()
	docs, err := manifest.Split(name, stream)
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		objs = append(objs, d.Object)
	}
	policy, err := authpolicy.Find(objs, namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := authpolicy.Parse(policy)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// token makes the ServiceAccount namespace/name if it is missing and
// returns a token of it for audiences, as `kubectl create token` does.
func token(t *testing.T, namespace, name string, audiences []string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := cp.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: audiences}}
	if err := cp.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("token of ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}
