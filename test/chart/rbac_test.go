package chart

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// controllerClient acts as the controller's ServiceAccount in namespace.
func controllerClient(t *testing.T, namespace string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":odh-serving-controller",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	c, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkControllerRights runs as the controller's ServiceAccount, with the
// rights the installed chart (ci/services-values.yaml) gave it: it can write
// every child the engine renders for the chart's services (the RBAC API
// lets it create the children's Roles and the endpoint picker's
// ClusterRoleBinding only because it holds what they grant) and inject the
// webhook CA, and nothing beyond the namespaces it watches.
func checkControllerRights(t *testing.T, namespace string) {
	t.Helper()
	// With what the controller renders for Istio's gateways, for Envoy
	// Gateway's and kgateway's, and where the Prometheus Operator is.
	testenv.InstallCRDs(t, cp.Client, controlplane.PlatformCRDs...)
	var stream string
	for _, gatewayTLS := range []string{"istio", "backend-tls-policy"} {
		stream += helm.Must(t, "template", "odh-serving", chartDir, "--namespace", namespace, "-f", ciValues(t, chartDir)["services"],
			"--post-renderer", binary, "--post-renderer-args", "post-render", "--post-renderer-args=--mode=static",
			"--post-renderer-args=--namespace="+namespace, "--post-renderer-args=--system-namespace="+namespace,
			"--post-renderer-args=--monitoring", "--post-renderer-args=--gateway-tls="+gatewayTLS) + "\n---\n"
	}
	c := controllerClient(t, namespace)
	apply := func(obj *unstructured.Unstructured, opts ...client.PatchOption) error {
		return c.Patch(t.Context(), obj, client.Apply, append(opts, client.ForceOwnership, client.FieldOwner("odh-serving"))...)
	}
	// Applied for real, in the engine's order (a RoleBinding needs its Role
	// to exist for the escalation check), and deleted at the end.
	children := 0
	for _, obj := range split(t, stream) {
		if obj.GetLabels()["app.kubernetes.io/part-of"] != "llminferenceservice" {
			continue
		}
		children++
		if err := apply(obj); err != nil {
			t.Errorf("the controller may not write %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			continue
		}
		t.Cleanup(func() {
			if err := cp.Client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
		})
	}
	if children < 20 {
		t.Errorf("only %d children rendered for the chart's two services", children)
	}

	vwc := &unstructured.Unstructured{}
	vwc.SetGroupVersionKind(gvkVWC)
	vwc.SetName("odh-serving-validation")
	caPatch := `[{"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "` + webhookCA + `"}]`
	if err := c.Patch(t.Context(), vwc, client.RawPatch(types.JSONPatchType, []byte(caPatch)), client.DryRunAll); err != nil {
		t.Errorf("the controller may not inject the CA into odh-serving-validation: %v", err)
	}

	// The CA bundle ConfigMap of the self-signed mode, by name; no other
	// ConfigMap may be changed.
	bundle := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "odh-serving-ca-bundle", "namespace": "team-a"}, "data": map[string]any{"ca.crt": "x"}}}
	if err := apply(bundle, client.DryRunAll); err != nil {
		t.Errorf("the controller may not write the CA bundle ConfigMap: %v", err)
	}

	denied := []*unstructured.Unstructured{
		// A ConfigMap that is not the CA bundle, where it watches.
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "coredns", "namespace": "team-a"}}},
		// Outside the watched namespaces (team-a and the system namespace).
		{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "x", "namespace": "default"}}},
		// No escalation: it holds only what the endpoint picker's binding grants.
		{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "odh-serving-escalate"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "odh-serving-controller", "namespace": namespace}},
		}},
		// Another webhook configuration.
		{Object: map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": map[string]any{"name": testValidation}}},
		// Secrets only in the self-signed mode, and only where it watches.
		{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "x", "namespace": "kube-system"}}},
	}
	for _, obj := range denied {
		if err := apply(obj, client.DryRunAll); !apierrors.IsForbidden(err) {
			t.Errorf("%s %s/%s: got %v, want Forbidden", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
}
