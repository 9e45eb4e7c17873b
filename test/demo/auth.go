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
	"github.com/opendatahub-io/odh-serving/engine/manifest"
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

// Auth at the gateway: Kuadrant's CRDs and the chart's AuthPolicy on the
// ingress gateway; the test gateway enforces it (test tooling:
// gateway.AuthPolicies). A request without a token is refused, one with a
// token of a ServiceAccount granted get on the service is answered. The
// controller runs with auth off here, so this shows the gateway's side
// only (docs/auth.md has the controller's); the policy is deleted after,
// and the gateway lets everything through again.
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

	// The chart's policy, as helm renders it with auth.enabled=true.
	args := d.helmArgs("template", release, filepath.Join(d.cfg.Root, chart), "--namespace", systemNamespace,
		"-f", filepath.Join(d.cfg.Root, valuesFile), "--set", "services=null", "--set", "auth.enabled=true", "--show-only", "templates/auth.yaml")
	out, err := d.quiet(ctx, d.helm, args...)
	if err != nil {
		return err
	}
	docs, err := manifest.Split("templates/auth.yaml", []byte(out))
	if err != nil {
		return err
	}
	var policy *unstructured.Unstructured
	for _, doc := range docs {
		if doc.Object.GetKind() == "AuthPolicy" && doc.Object.GetName() == "kserve-ingress-gateway-authn" {
			policy = doc.Object
		}
	}
	if policy == nil {
		return fmt.Errorf("helm template --set auth.enabled=true rendered no AuthPolicy kserve-ingress-gateway-authn")
	}
	audiences, _, _ := unstructured.NestedStringSlice(policy.Object, "spec", "rules", "authentication", "kubernetes-user", "kubernetesTokenReview", "audiences")
	if err := d.c.Create(ctx, policy); err != nil {
		return fmt.Errorf("create AuthPolicy %s/%s: %w", policy.GetNamespace(), policy.GetName(), err)
	}
	d.out.Auth = &authOutcome{Policy: policy.GetNamespace() + "/" + policy.GetName()}
	d.say("$ helm template ... --set auth.enabled=true --show-only templates/auth.yaml | kubectl create -f -   # AuthPolicy %s on Gateway kserve-ingress-gateway", d.out.Auth.Policy)

	targets, err := d.targets(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(targets, func(t target) bool { return t.ref.Name == authService })
	if i < 0 {
		return fmt.Errorf("no service %s among %v", authService, d.services)
	}
	t := targets[i]
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

	if err := d.c.Delete(ctx, policy); err != nil {
		return fmt.Errorf("delete AuthPolicy %s: %w", d.out.Auth.Policy, err)
	}
	d.say("AuthPolicy %s deleted: the gateway lets every request through again (the controller runs with auth off in this demo)", d.out.Auth.Policy)
	return nil
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
