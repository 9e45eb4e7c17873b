package chart

import (
	"crypto/rand"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/apiserver"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// gatewayPolicy is what the rendered MaaS AuthPolicy asks of the cluster:
// the TokenReview's audiences and the SubjectAccessReview's fields, each a
// {value} or a CEL {expression} as Authorino reads them.
type gatewayPolicy struct {
	audiences []string
	sar       map[string]any
}

// maasGatewayPolicy reads maas-gateway-auth from the chart rendered with
// values and extra flags.
func maasGatewayPolicy(t *testing.T, objs []*unstructured.Unstructured) gatewayPolicy {
	t.Helper()
	policy := one(t, objs, "AuthPolicy", "maas-gateway-auth")
	rules, _, _ := unstructured.NestedMap(policy.Object, "spec", "defaults", "rules")
	audiences, _, _ := unstructured.NestedStringSlice(rules, "authentication", "maas-token", "kubernetesTokenReview", "audiences")
	sar, _, _ := unstructured.NestedMap(rules, "authorization", "model-access", "kubernetesSubjectAccessReview")
	if len(audiences) == 0 || sar == nil {
		t.Fatalf("maas-gateway-auth has no TokenReview audiences or SubjectAccessReview: %v", policy.Object["spec"])
	}
	return gatewayPolicy{audiences: audiences, sar: sar}
}

// celEnv evaluates Authorino's CEL expressions over the authorization JSON
// (request, auth), with the string extensions (split).
func celEnv(t *testing.T) *cel.Env {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("request", cel.DynType), cel.Variable("auth", cel.DynType), ext.Strings())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// valueOf is a policy field's value for the authorization JSON vars: its
// static value, or its CEL expression evaluated, converted to want's type.
func valueOf[T any](t *testing.T, env *cel.Env, field any, vars map[string]any) T {
	t.Helper()
	var zero T
	m, ok := field.(map[string]any)
	if !ok {
		t.Fatalf("policy field %v is not an object", field)
	}
	if v, ok := m["value"]; ok {
		out, ok := v.(T)
		if !ok {
			t.Fatalf("policy value %v is a %T, want %T", v, v, zero)
		}
		return out
	}
	expr, ok := m["expression"].(string)
	if !ok {
		t.Fatalf("policy field %v: neither a value nor an expression (this check reads no selectors)", m)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("expression %q: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := prg.Eval(vars)
	if err != nil {
		t.Fatalf("expression %q on %v: %v", expr, vars, err)
	}
	native, err := res.ConvertToNative(reflect.TypeFor[T]())
	if err != nil {
		t.Fatalf("expression %q: %v", expr, err)
	}
	return native.(T)
}

// decide is the MaaS AuthPolicy's decision on a request for path with
// token ("" for none), asked of the real API server: the TokenReview for
// the policy's audiences, then the SubjectAccessReview built from the
// policy's fields over the TokenReview's user and the path. It returns
// whether the request is allowed, and why not.
func (p gatewayPolicy) decide(t *testing.T, env *cel.Env, kube kubernetes.Interface, token, path string) (bool, string) {
	t.Helper()
	if token == "" {
		return false, "no credentials (Authorino answers 401 before any authorization)"
	}
	tr, err := kube.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: p.audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Status.Authenticated {
		return false, "TokenReview: " + tr.Status.Error
	}
	return p.authorize(t, env, kube, tr.Status.User, path)
}

// authorize is the SubjectAccessReview half of decide, for u.
func (p gatewayPolicy) authorize(t *testing.T, env *cel.Env, kube kubernetes.Interface, u authenticationv1.UserInfo, path string) (bool, string) {
	t.Helper()
	groups := make([]any, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = g
	}
	vars := map[string]any{
		"request": map[string]any{"path": path},
		"auth":    map[string]any{"identity": map[string]any{"user": map[string]any{"username": u.Username, "groups": groups}}},
	}
	attrs, _ := p.sar["resourceAttributes"].(map[string]any)
	field := func(name string) string {
		if attrs[name] == nil {
			return ""
		}
		return valueOf[string](t, env, attrs[name], vars)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   valueOf[string](t, env, p.sar["user"], vars),
		Groups: valueOf[[]string](t, env, p.sar["authorizationGroups"], vars),
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: field("verb"), Group: field("group"), Resource: field("resource"),
			Namespace: field("namespace"), Name: field("name"),
		},
	}}
	out, err := kube.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out.Status.Allowed, fmt.Sprintf("SubjectAccessReview %+v as %s %v: %s", *sar.Spec.ResourceAttributes, sar.Spec.User, sar.Spec.Groups, out.Status.Reason)
}

// TestMaaSAuthPolicyDecisions applies the chart's rendered MaaS AuthPolicy
// to the real authenticator and authorizer: its TokenReview audiences and
// its SubjectAccessReview, built from the policy's own fields and CEL
// expressions over the request path, against the model-user Role and
// RoleBindings the engine builds for a service published to premium only
// (build.ModelAccess, as the controller applies them). A premium MaaS
// token is allowed on that model; a free one is denied, so is one on a
// model of another name, and so is anonymous: refused without a token, and
// denied by the SubjectAccessReview as system:anonymous too.
func TestMaaSAuthPolicyDecisions(t *testing.T) {
	prefix := "maas-" + strings.ToLower(rand.Text()[:6]) + "-tier-"
	_, objs := render(t, templateArgs(chartDir, ciValues(t, chartDir)["maas"], "--set", "maas.tierNamespacePrefix="+prefix)...)
	policy := maasGatewayPolicy(t, objs)
	data, _, _ := unstructured.NestedString(one(t, objs, "ConfigMap", tier.ConfigMapName).Object, "data", tier.ConfigMapKey)
	tiers, err := tier.Parse(data, prefix)
	if err != nil {
		t.Fatal(err)
	}

	ns := testenv.NewNamespace(t, cp.Client, "maas-sar")
	svc := &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{
		Name: "premium-chat", Namespace: ns, UID: "premium-chat-uid",
		Annotations: map[string]string{tier.AnnotationTiers: `["premium"]`},
	}}
	access, _ := build.ModelAccess(svc, tiers)
	if len(access) == 0 {
		t.Fatal("build.ModelAccess built nothing for a service published to premium")
	}
	for _, o := range access {
		if err := cp.Client.Create(t.Context(), o.(client.Object)); err != nil {
			t.Fatalf("create %T %s: %v", o, o.(client.Object).GetName(), err)
		}
	}

	// MaaS tokens as tokenrequests mints them: a ServiceAccount of the
	// tier's namespace, the TokenRequest API, the MaaS audience.
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	token := func(tierName string) string {
		tns := tiers.Namespace(tierName)
		testenv.EnsureNamespace(t, cp.Client, tns)
		if _, err := kube.CoreV1().ServiceAccounts(tns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "alice-1a2b"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := kube.CoreV1().ServiceAccounts(tns).CreateToken(t.Context(), "alice-1a2b", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: []string{apiserver.DefaultTokenAudience}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	premium, free := token("premium"), token("free")
	env := celEnv(t)
	model := "/" + ns + "/premium-chat/v1/chat/completions"
	for _, tc := range []struct {
		who, token, path string
		want             bool
	}{
		{"a premium MaaS token", premium, model, true},
		{"a free MaaS token", free, model, false},
		{"a premium MaaS token on another model", premium, "/" + ns + "/other-chat/v1/chat/completions", false},
		{"anonymous", "", model, false},
	} {
		if got, why := policy.decide(t, env, kube, tc.token, tc.path); got != tc.want {
			t.Errorf("%s on %s: allowed %v, want %v (%s)", tc.who, tc.path, got, tc.want, why)
		}
	}
	anonymous := authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}
	if got, why := policy.authorize(t, env, kube, anonymous, model); got {
		t.Errorf("the SubjectAccessReview allows system:anonymous: %s", why)
	}
}
