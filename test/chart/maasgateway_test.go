package chart

import (
	"crypto/rand"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/apiserver"
	"github.com/opendatahub-io/odh-serving/test/authpolicy"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// maasAccessRules are the rules of the rendered maas-gateway-auth that
// decide access on the cluster's authenticator and authorizer: the
// TokenReview and the SubjectAccessReview model-access, as test/authpolicy
// applies them. Left out, and so named here: the tier lookup (metadata
// tier, our tierreviews: TestTierReviews in test/apiserver), the check
// that it found a tier (tier-resolved) and the identity it exports
// (response), which the rate limits read.
func maasAccessRules(t *testing.T, objs []*unstructured.Unstructured) *authpolicy.Rules {
	t.Helper()
	policy := one(t, objs, "AuthPolicy", "maas-gateway-auth").DeepCopy()
	rules, _, _ := unstructured.NestedMap(policy.Object, "spec", "defaults", "rules")
	for _, key := range []string{"metadata", "response"} {
		if _, ok := rules[key]; !ok {
			t.Fatalf("maas-gateway-auth has no rules.%s", key)
		}
		delete(rules, key)
	}
	authz, _ := rules["authorization"].(map[string]any)
	if _, ok := authz["tier-resolved"]; !ok {
		t.Fatal("maas-gateway-auth has no authorization tier-resolved")
	}
	delete(authz, "tier-resolved")
	if err := unstructured.SetNestedMap(policy.Object, rules, "spec", "defaults", "rules"); err != nil {
		t.Fatal(err)
	}
	parsed, err := authpolicy.Parse(policy)
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// TestMaaSAuthPolicyDecisions applies the chart's rendered MaaS AuthPolicy
// to the real authenticator and authorizer (test/authpolicy): its
// TokenReview audiences and its SubjectAccessReview, built from the
// policy's own fields and CEL expressions over the request, against the
// model-user Role and RoleBindings the engine builds for a service
// published to premium only (build.ModelAccess, as the controller applies
// them). A premium MaaS token is allowed on that model (200); a free one
// is denied (403), so is one on a model of another name, and anonymous is
// refused (401).
func TestMaaSAuthPolicyDecisions(t *testing.T) {
	prefix := "maas-" + strings.ToLower(rand.Text()[:6]) + "-tier-"
	_, objs := render(t, templateArgs(chartDir, ciValues(t, chartDir)["maas"], "--set", "maas.tierNamespacePrefix="+prefix)...)
	rules := maasAccessRules(t, objs)
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
	model := "/" + ns + "/premium-chat/v1/chat/completions"
	authorizer := authpolicy.Authorizer{Client: cp.Client}
	for _, tc := range []struct {
		who, token, path string
		want             int
	}{
		{"a premium MaaS token", premium, model, http.StatusOK},
		{"a free MaaS token", free, model, http.StatusForbidden},
		{"a premium MaaS token on another model", premium, "/" + ns + "/other-chat/v1/chat/completions", http.StatusForbidden},
		{"anonymous", "", model, http.StatusUnauthorized},
	} {
		req := authpolicy.Request{Method: http.MethodPost, Path: tc.path, Headers: map[string]string{}}
		if tc.token != "" {
			req.Headers["authorization"] = "Bearer " + tc.token
		}
		d, err := authorizer.Check(t.Context(), rules, req)
		if err != nil {
			t.Fatal(err)
		}
		if d.Code != tc.want {
			t.Errorf("%s on %s: %d (%s), want %d", tc.who, tc.path, d.Code, d.Reason, tc.want)
		}
	}
}
