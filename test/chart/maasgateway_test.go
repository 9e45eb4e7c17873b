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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/apiserver"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
	"github.com/opendatahub-io/odh-serving/test/authpolicy"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// maasAccessRules are the rules of the AuthPolicy the engine renders for a
// published service's MaaS route (what the controller applies, with the
// chart's --maas-token-audience) that decide access on the cluster's
// authenticator and authorizer: the TokenReview and the
// SubjectAccessReview model-access, as test/authpolicy applies them. Left
// out, and so named here: the tier lookup (metadata tier, our
// tierreviews), the check that it found a tier (tier-resolved) and the
// identity it exports (response), which test/authpolicy's own test and
// test/tenancy's MaaS attacks apply with the API server's tierreviews.
func maasAccessRules(t *testing.T, svc *v1alpha2.LLMInferenceService, tiers *tier.Config, audience string) *authpolicy.Rules {
	t.Helper()
	svc = svc.DeepCopy()
	svc.Spec = v1alpha2.LLMInferenceServiceSpec{
		Model:    v1alpha2.LLMModelSpec{Name: ptr.To("Qwen/Qwen2.5-0.5B-Instruct")},
		BaseRefs: []corev1.LocalObjectReference{{Name: "kserve-config-llm-cpu-simulator"}},
		Router:   &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}},
	}
	res, err := engine.Render(t.Context(), svc, presetstest.Catalog(t, nil), engine.Options{
		Images: presetstest.Images(t), Tiers: tiers, Auth: true,
		MaaSGatewayName: "maas-default-gateway", MaaSTokenAudience: audience,
	})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := res.Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	policy, err := authpolicy.Find(objs, svc.Namespace, res.Named(engine.RoleMaaSAuth))
	if err != nil {
		t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedMap(policy.Object, "spec", "rules")
	for _, key := range []string{"metadata", "response"} {
		if _, ok := rules[key]; !ok {
			t.Fatalf("%s has no rules.%s", policy.GetName(), key)
		}
		delete(rules, key)
	}
	authz, _ := rules["authorization"].(map[string]any)
	if _, ok := authz["tier-resolved"]; !ok {
		t.Fatalf("%s has no authorization tier-resolved", policy.GetName())
	}
	delete(authz, "tier-resolved")
	if err := unstructured.SetNestedMap(policy.Object, rules, "spec", "rules"); err != nil {
		t.Fatal(err)
	}
	parsed, err := authpolicy.Parse(policy)
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// TestMaaSAuthPolicyDecisions applies the MaaS route policy the engine
// renders for a service published to premium only, with the chart's token
// audience, to the real authenticator and authorizer (test/authpolicy):
// its TokenReview audiences and its SubjectAccessReview, which names the
// service by value, against the model-user Role and RoleBindings the
// engine builds (build.ModelAccess, as the controller applies them). A
// premium MaaS token is allowed whatever path it came by (200), a free
// one is denied (403), anonymous is refused (401). The chart's
// maas-gateway-auth, on the listener, denies every request (403): no path
// is parsed anywhere.
func TestMaaSAuthPolicyDecisions(t *testing.T) {
	prefix := "maas-" + strings.ToLower(rand.Text()[:6]) + "-tier-"
	_, objs := render(t, templateArgs(chartDir, ciValues(t, chartDir)["maas"], "--set", "maas.tierNamespacePrefix="+prefix)...)
	data, _, _ := unstructured.NestedString(one(t, objs, "ConfigMap", tier.ConfigMapName).Object, "data", tier.ConfigMapKey)
	tiers, err := tier.Parse(data, prefix)
	if err != nil {
		t.Fatal(err)
	}
	listener, err := authpolicy.Parse(one(t, objs, "AuthPolicy", "maas-gateway-auth"))
	if err != nil {
		t.Fatal(err)
	}

	ns := testenv.NewNamespace(t, cp.Client, "maas-sar")
	svc := &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{
		Name: "premium-chat", Namespace: ns, UID: "premium-chat-uid",
		Annotations: map[string]string{tier.AnnotationTiers: `["premium"]`},
	}}
	rules := maasAccessRules(t, svc, tiers, apiserver.DefaultTokenAudience)
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
		{"a premium MaaS token on the publisher path", premium, "/publishers/" + ns + "/models/Qwen/Qwen2.5-0.5B-Instruct/v1/chat/completions", http.StatusOK},
		{"a free MaaS token", free, model, http.StatusForbidden},
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
		if d, err := authorizer.Check(t.Context(), listener, req); err != nil || d.Code != http.StatusForbidden {
			t.Errorf("%s on %s, under maas-gateway-auth: %d (%s) %v, want 403: the listener's default denies", tc.who, tc.path, d.Code, d.Reason, err)
		}
	}
}
