package requests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/test/authpolicy"
	"github.com/opendatahub-io/odh-serving/test/gateway"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestAuth sends real requests through the test gateway, which enforces
// the AuthPolicies in the cluster (gateway.AuthPolicies: their TokenReview
// and SubjectAccessReview on the real API server), for a service rendered
// with --enable-auth: the chart's default deny on the gateway, as `helm
// template` renders it with auth.enabled, and the service's own policy on
// its route, as the engine renders it. No token, or a token the API server
// does not accept: 401. A token of a ServiceAccount granted get on the
// service: answered by a pod, through GIE's endpoint picker. A token
// without the grant: 403. Once the route's policy is the anonymous one the
// engine renders for the annotation enable-auth "false", a request without
// a token is answered; back to the protected one, refused again. Without
// the route's policy, the gateway's default deny refuses even the granted
// caller.
func TestAuth(t *testing.T) {
	e := startPhase(t, convention.PhaseV1, phaseOptions{auth: true})
	ctx := t.Context()
	post := func(bearer string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, strings.NewReader(`{"model":"Qwen/Qwen2.5-7B-Instruct","prompt":"hi","max_tokens":5}`))
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(body)
	}
	pods := map[string]bool{e.podNames[0]: true, e.podNames[1]: true}
	routePolicy := e.ns + "/" + e.routePolicy.GetName()

	if code, hdr, body := post(e.token); code != http.StatusOK || !pods[hdr.Get("X-Model-Server-Pod")] {
		t.Errorf("a token granted get on the service: %d from pod %q: %s", code, hdr.Get("X-Model-Server-Pod"), body)
	}
	denied := saToken(t, e.c, e.ns, "not-granted", e.audiences)
	for _, c := range []struct {
		what, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the API server does not accept", "not-a-token", http.StatusUnauthorized},
		{"a token for another audience", saToken(t, e.c, e.ns, caller, []string{"https://elsewhere.example.com"}), http.StatusUnauthorized},
		{"a token without the grant", denied, http.StatusForbidden},
	} {
		code, hdr, body := post(c.token)
		if code != c.want || hdr.Get("X-Model-Server-Pod") != "" || hdr.Get(gateway.AuthPolicyHeader) != routePolicy {
			t.Errorf("%s: %d from pod %q by AuthPolicy %q: %s; want %d from the route's policy %s, no pod", c.what, code,
				hdr.Get("X-Model-Server-Pod"), hdr.Get(gateway.AuthPolicyHeader), body, c.want, routePolicy)
		}
	}

	// Open the service: the route's policy becomes the anonymous one the
	// engine renders for the annotation, applied as the controller would.
	open := e.svc.DeepCopy()
	open.Annotations = map[string]string{convention.AnnotationEnableAuth: "false"}
	setRules := func(from *unstructured.Unstructured) {
		t.Helper()
		rules, _, _ := unstructured.NestedMap(from.Object, "spec", "rules")
		policy := &unstructured.Unstructured{}
		policy.SetGroupVersionKind(gateway.AuthPolicyGVK)
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.routePolicy), policy); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedMap(policy.Object, rules, "spec", "rules"); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Update(ctx, policy); err != nil {
			t.Fatal(err)
		}
	}
	setRules(renderedAuthPolicy(t, open, e.phase))
	testenv.Eventually(t, "a request without a token answered once the service is open", func() error {
		if code, hdr, body := post(""); code != http.StatusOK || !pods[hdr.Get("X-Model-Server-Pod")] {
			return fmt.Errorf("%d from pod %q: %s", code, hdr.Get("X-Model-Server-Pod"), body)
		}
		return nil
	})
	setRules(e.routePolicy)
	testenv.Eventually(t, "a request without a token refused once the service is closed again", func() error {
		if code, _, body := post(""); code != http.StatusUnauthorized {
			return fmt.Errorf("%d: %s", code, body)
		}
		return nil
	})
	// No policy on the route: the gateway's default deny.
	if err := e.c.Delete(ctx, e.routePolicy.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	gwPolicy := "opendatahub/" + convention.IngressGatewayName + "-authn"
	testenv.Eventually(t, "the granted caller refused by the gateway's default deny once the route's policy is gone", func() error {
		if code, hdr, body := post(e.token); code != http.StatusForbidden || hdr.Get(gateway.AuthPolicyHeader) != gwPolicy {
			return fmt.Errorf("%d by AuthPolicy %q: %s", code, hdr.Get(gateway.AuthPolicyHeader), body)
		}
		return nil
	})
}

// caller is the ServiceAccount protect grants get on the service.
const caller = "caller"

// protect applies the chart's AuthPolicy for the Gateway gw (its default
// deny), as `helm template` renders it with auth.enabled, and the
// service's own AuthPolicy from res, grants the ServiceAccount caller get
// on svc, and returns the route's policy, the audiences it accepts and a
// token of caller for them.
func protect(tb testing.TB, c client.Client, gw *gatewayv1.Gateway, svc *v1alpha2.LLMInferenceService, res *engine.Result) (*unstructured.Unstructured, []string, string) {
	tb.Helper()
	ctx := tb.Context()
	helm := testenv.HelmFor(tb, "helm", "")
	out := helm.Must(tb, "template", "odh-serving", "../../charts/odh-serving", "--namespace", gw.Namespace,
		"--set", "auth.enabled=true", "--set", "gateways.ingress.name="+gw.Name)
	docs, err := manifest.Split("helm template", []byte(out))
	if err != nil {
		tb.Fatal(err)
	}
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		objs = append(objs, d.Object)
	}
	policy, err := authpolicy.Find(objs, gw.Namespace, gw.Name+"-authn")
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Create(ctx, policy); err != nil {
		tb.Fatalf("create AuthPolicy %s/%s: %v", gw.Namespace, policy.GetName(), err)
	}
	// The Gateway outlives the test (the package's tests share it): its
	// policy goes with the test.
	tb.Cleanup(func() {
		if err := c.Delete(context.WithoutCancel(ctx), policy); err != nil && !apierrors.IsNotFound(err) {
			tb.Errorf("delete AuthPolicy %s/%s: %v", gw.Namespace, policy.GetName(), err)
		}
	})
	var route *unstructured.Unstructured
	for i, o := range res.Objects {
		if res.Children[i].Role == engine.RoleAuth {
			route = o.(*unstructured.Unstructured).DeepCopy()
		}
	}
	if route == nil {
		tb.Fatalf("service %s/%s rendered with --enable-auth: no AuthPolicy", svc.Namespace, svc.Name)
	}
	rules, err := authpolicy.Parse(route)
	if err != nil {
		tb.Fatal(err)
	}
	var audiences []string
	for _, a := range rules.Authentication {
		if a.KubernetesTokenReview != nil {
			audiences = append(audiences, a.KubernetesTokenReview.Audiences...)
		}
	}
	if len(audiences) == 0 {
		tb.Fatalf("AuthPolicy %s/%s: no TokenReview audience", route.GetNamespace(), route.GetName())
	}
	if err := c.Create(ctx, route.DeepCopy()); err != nil {
		tb.Fatalf("create AuthPolicy %s/%s: %v", route.GetNamespace(), route.GetName(), err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-caller"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"llminferenceservices"}, ResourceNames: []string{svc.Name}, Verbs: []string{"get"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: svc.Namespace, Name: caller}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := c.Create(ctx, o); err != nil {
			tb.Fatal(err)
		}
	}
	return route, audiences, saToken(tb, c, svc.Namespace, caller, audiences)
}

// saToken makes the ServiceAccount namespace/name if it is missing and
// returns a token of it for audiences, as `kubectl create token` does.
func saToken(tb testing.TB, c client.Client, namespace, name string, audiences []string) string {
	tb.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Create(tb.Context(), sa); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences}}
	if err := c.SubResource("token").Create(tb.Context(), sa, tr); err != nil {
		tb.Fatalf("token of ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// renderedAuthPolicy renders svc with --enable-auth and returns its
// route's AuthPolicy (the anonymous one of a service opened with the
// annotation).
func renderedAuthPolicy(tb testing.TB, svc *v1alpha2.LLMInferenceService, phase convention.Phase) *unstructured.Unstructured {
	tb.Helper()
	res := render(tb, svc, phase, true)
	for i, o := range res.Objects {
		if res.Children[i].Role == engine.RoleAuth {
			return o.(*unstructured.Unstructured).DeepCopy()
		}
	}
	tb.Fatalf("service %s/%s with %s %q: no AuthPolicy rendered", svc.Namespace, svc.Name, convention.AnnotationEnableAuth, svc.Annotations[convention.AnnotationEnableAuth])
	return nil
}
