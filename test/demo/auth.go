package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/presets"
	"github.com/opendatahub-io/odh-serving/test/gateway"
)

// The auth step's caller: a ServiceAccount granted get on authService.
const (
	authService = "qwen"
	authCaller  = "caller"
)

// authOutcome is what the auth step showed.
type authOutcome struct {
	// Policy is the AuthPolicy the gateway enforced (namespace/name).
	Policy string
	// Without and With are the answers to a request without a token and
	// with the caller's; Pod answered the latter.
	Without, With int
	Pod           string
}

// Auth at the gateway: Kuadrant's CRDs, the chart's AuthPolicy on the
// ingress gateway (a default deny) and the AuthPolicy the engine renders
// for the service's route (which names the service); the test gateway
// enforces them (test tooling: gateway.AuthPolicies). A request without a
// token is refused, one with a token of a ServiceAccount granted get on
// the service is answered. The controller runs with auth off here, so this
// shows the gateway's side only (docs/auth.md has the controller's); the
// policies are deleted after, and the gateway lets everything through
// again.
func (d *demo) auth(ctx context.Context) error {
	d.header("Auth at the gateway (docs/auth.md): the chart's AuthPolicy, enforced by the test gateway (test tooling: the policy's TokenReview and SubjectAccessReview on the API server, as Authorino's)")
	defs, err := crds.Load(crds.Kuadrant)
	if err != nil {
		return err
	}
	for _, crd := range defs {
		if err := d.c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
		if err := d.poll(ctx, "CRD "+crd.Name+" established", 200*time.Millisecond, func() (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := d.c.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return err
		}
	}
	d.say("Kuadrant's CRDs (AuthPolicy, RateLimitPolicy, TokenRateLimitPolicy), as Kuadrant installs them; no Kuadrant runs")

	// The chart's policy, as helm renders it with auth.enabled=true, and
	// the audiences its controller renders the services' policies for.
	args := d.helmArgs("template", release, filepath.Join(d.cfg.Root, chart), "--namespace", systemNamespace,
		"-f", filepath.Join(d.cfg.Root, valuesFile), "--set", "services=null", "--set", "auth.enabled=true",
		"--show-only", "templates/auth.yaml", "--show-only", "templates/deployment.yaml")
	out, err := d.quiet(ctx, d.helm, args...)
	if err != nil {
		return err
	}
	docs, err := manifest.Split("helm template", []byte(out))
	if err != nil {
		return err
	}
	var gatewayPolicy *unstructured.Unstructured
	var audiences []string
	for _, doc := range docs {
		switch o := doc.Object; o.GetKind() {
		case "AuthPolicy":
			if o.GetName() == "kserve-ingress-gateway-authn" {
				gatewayPolicy = o
			}
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				cargs, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
				for _, a := range cargs {
					if v, ok := strings.CutPrefix(a, "--auth-audiences="); ok {
						audiences = strings.Split(v, ",")
					}
				}
			}
		}
	}
	if gatewayPolicy == nil || len(audiences) == 0 {
		return fmt.Errorf("helm template --set auth.enabled=true rendered no AuthPolicy kserve-ingress-gateway-authn, or no controller with --auth-audiences")
	}
	if err := d.c.Create(ctx, gatewayPolicy); err != nil {
		return fmt.Errorf("create AuthPolicy %s/%s: %w", gatewayPolicy.GetNamespace(), gatewayPolicy.GetName(), err)
	}
	d.say("$ helm template ... --set auth.enabled=true --show-only templates/auth.yaml | kubectl create -f -   # AuthPolicy %s/%s on Gateway kserve-ingress-gateway: a default deny",
		gatewayPolicy.GetNamespace(), gatewayPolicy.GetName())

	targets, err := d.targets(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(targets, func(t target) bool { return t.ref.Name == authService })
	if i < 0 {
		return fmt.Errorf("no service %s among %v", authService, d.services)
	}
	t := targets[i]
	// The service's own policy, as the controller renders it with
	// --enable-auth: the route's name depends on the service's name only.
	policy, err := routeAuthPolicy(ctx, t.ref.Namespace, t.ref.Name, audiences)
	if err != nil {
		return err
	}
	if err := d.c.Create(ctx, policy); err != nil {
		return fmt.Errorf("create AuthPolicy %s/%s: %w", policy.GetNamespace(), policy.GetName(), err)
	}
	d.out.Auth = &authOutcome{Policy: policy.GetNamespace() + "/" + policy.GetName()}
	d.say("AuthPolicy %s on HTTPRoute %s, as the controller renders it with --enable-auth: a token, and get on llminferenceservice %s", d.out.Auth.Policy,
		policy.GetName()[:len(policy.GetName())-len("-authn")], t.ref)
	token, err := d.grantedToken(ctx, t.ref.Namespace, audiences)
	if err != nil {
		return err
	}
	d.say("ServiceAccount %s/%s, granted get on llminferenceservice %s (a Role and RoleBinding); a token for %s", t.ref.Namespace, authCaller, t.ref, strings.Join(audiences, ", "))
	url := t.url + "/v1/chat/completions"
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Which pod are you?"}],"max_tokens":8}`, t.model)
	// The gateway reads the policy from the API server; RBAC takes the new
	// binding a moment after it is made.
	var without, with authAnswer
	if err := d.poll(ctx, "the gateway enforces "+d.out.Auth.Policy, 200*time.Millisecond, func() (bool, error) {
		var err error
		if without, err = authPost(ctx, url, body, ""); err != nil {
			return false, err
		}
		if with, err = authPost(ctx, url, body, token); err != nil {
			return false, err
		}
		return without.code == http.StatusUnauthorized && with.code == http.StatusOK, nil
	}); err != nil {
		return fmt.Errorf("%w: without a token %d %s; with one %d %s", err, without.code, without.reason, with.code, with.reason)
	}
	d.out.Auth.Without, d.out.Auth.With, d.out.Auth.Pod = without.code, with.code, with.pod
	d.say("$ curl %s -d '{\"model\":%q,...}'", url, t.model)
	d.say("  %d %s: %s", without.code, http.StatusText(without.code), without.reason)
	d.say("$ curl %s -H \"Authorization: Bearer $(kubectl create token %s -n %s --audience %s)\" -d '{\"model\":%q,...}'",
		url, authCaller, t.ref.Namespace, strings.Join(audiences, ","), t.model)
	d.say("  %d %s, answered by pod %s", with.code, http.StatusText(with.code), with.pod)

	for _, p := range []*unstructured.Unstructured{policy, gatewayPolicy} {
		if err := d.c.Delete(ctx, p); err != nil {
			return fmt.Errorf("delete AuthPolicy %s/%s: %w", p.GetNamespace(), p.GetName(), err)
		}
	}
	d.say("AuthPolicies %s and %s/%s deleted: the gateway lets every request through again (the controller runs with auth off in this demo)",
		d.out.Auth.Policy, gatewayPolicy.GetNamespace(), gatewayPolicy.GetName())
	return nil
}

// routeAuthPolicy is the AuthPolicy the engine renders, with auth on for
// audiences, on the managed route of the service namespace/name.
func routeAuthPolicy(ctx context.Context, namespace, name string, audiences []string) (*unstructured.Unstructured, error) {
	catalog, err := presets.Default(nil)
	if err != nil {
		return nil, err
	}
	images, err := presets.Images()
	if err != nil {
		return nil, err
	}
	svc := &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	svc.Spec.Router = &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}}
	res, err := engine.Render(ctx, svc, catalog, engine.Options{Images: images, Auth: true, AuthAudiences: audiences})
	if err != nil {
		return nil, fmt.Errorf("render the AuthPolicy of %s/%s: %w", namespace, name, err)
	}
	for i, o := range res.Objects {
		if res.Children[i].Role == engine.RoleAuth {
			return o.(*unstructured.Unstructured).DeepCopy(), nil
		}
	}
	return nil, fmt.Errorf("%s/%s rendered with auth on: no AuthPolicy", namespace, name)
}

// grantedToken makes the ServiceAccount authCaller in ns, lets it get
// authService there, and returns a token of it for audiences.
func (d *demo) grantedToken(ctx context.Context, ns string, audiences []string) (string, error) {
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authService + "-caller"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"llminferenceservices"}, ResourceNames: []string{authService}, Verbs: []string{"get"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: authCaller}},
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authCaller}}
	for _, o := range []client.Object{sa, role, binding} {
		if err := d.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create %T %s/%s: %w", o, ns, o.GetName(), err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences}}
	if err := d.c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("a token of ServiceAccount %s/%s: %w", ns, authCaller, err)
	}
	return tr.Status.Token, nil
}

// authAnswer is what the gateway answered: the status, and the pod that
// answered or the reason for a refusal.
type authAnswer struct {
	code        int
	pod, reason string
}

func authPost(ctx context.Context, url, body, token string) (authAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return authAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return authAnswer{}, fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	a := authAnswer{code: resp.StatusCode, pod: resp.Header.Get("X-Model-Server-Pod"), reason: resp.Header.Get("X-Ext-Auth-Reason")}
	if a.reason == "" && a.code != http.StatusOK {
		a.reason = strings.TrimSpace(string(text))
	}
	if p := resp.Header.Get(gateway.AuthPolicyHeader); p != "" {
		a.reason += " (AuthPolicy " + p + ")"
	}
	return a, nil
}
