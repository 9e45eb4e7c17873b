package chart

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// The odh-serving chart's names are cluster-wide (one odh-serving per
// cluster), so the install tests run one after the other and each
// uninstalls what it installed.

var (
	gvkService     = schema.GroupVersionKind{Group: "serving.kserve.io", Version: "v1alpha2", Kind: "LLMInferenceService"}
	gvkServiceV1   = schema.GroupVersionKind{Group: "serving.kserve.io", Version: "v1alpha1", Kind: "LLMInferenceService"}
	gvkPreset      = schema.GroupVersionKind{Group: "serving.kserve.io", Version: "v1alpha2", Kind: "LLMInferenceServiceConfig"}
	gvkDeployment  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	gvkVWC         = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}
	gvkCertificate = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}
)

// webhookArgs point the charts' webhooks at the control plane's webhook
// server.
func webhookArgs() []string {
	return []string{"--set", "webhook.externalURL=" + webhookURL, "--set", "webhook.caBundle=" + webhookCA}
}

// get reads an object; found is false when it does not exist.
func get(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) (obj *unstructured.Unstructured, found bool) {
	t.Helper()
	obj = &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err := cp.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvk.Kind, namespace, name, err)
	}
	return obj, true
}

func mustExist(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj, found := get(t, gvk, namespace, name)
	if !found {
		t.Fatalf("%s %s/%s does not exist", gvk.Kind, namespace, name)
	}
	return obj
}

func mustNotExist(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	if _, found := get(t, gvk, namespace, name); found {
		t.Errorf("%s %s/%s still exists", gvk.Kind, namespace, name)
	}
}

func count(t *testing.T, gvk schema.GroupVersionKind, namespace string) int {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := cp.Client.List(t.Context(), list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func nested(t *testing.T, obj *unstructured.Unstructured, fields ...string) int64 {
	t.Helper()
	v, found, err := unstructured.NestedInt64(obj.Object, fields...)
	if !found || err != nil {
		t.Fatalf("%s %s: %s: found %v, %v", obj.GetKind(), obj.GetName(), strings.Join(fields, "."), found, err)
	}
	return v
}

// uninstallOnFailure leaves the cluster clean for the next test when this
// one stops half way: it uninstalls the odh-serving release in namespace.
func uninstallOnFailure(t *testing.T, namespace string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			_, _ = helm.Run(context.Background(), "uninstall", "odh-serving", "-n", namespace)
		}
	})
}

// userService writes an LLMInferenceService outside any release, as a user
// would, in v1alpha1 so that it goes through the conversion webhook the
// odh-serving-crds chart configured. Uninstalls leave it, so the test
// deletes it when it ends (through v1alpha2, the stored version), for the
// next run of the test (-count).
func userService(t *testing.T, namespace, name string) {
	t.Helper()
	svc := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"model": map[string]any{"uri": "hf://Qwen/Qwen3-0.6B"}},
	}}
	svc.SetGroupVersionKind(gvkServiceV1)
	if err := cp.Client.Create(t.Context(), svc); err != nil {
		t.Fatalf("create the user's service: %v", err)
	}
	deleteAtEnd(t, gvkService, namespace, name)
}

// deleteAtEnd deletes an object when the test ends.
func deleteAtEnd(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	t.Cleanup(func() {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		obj.SetNamespace(namespace)
		obj.SetName(name)
		if err := cp.Client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s %s/%s: %v", gvk.Kind, namespace, name, err)
		}
	})
}

// TestInstallControllerMode installs odh-serving without a post-renderer:
// the chart's objects exist, the services wait for a controller. An upgrade
// changes a service and drops a preset; an uninstall keeps the CRDs and the
// user's services.
func TestInstallControllerMode(t *testing.T) {
	const ns = "odh-system"
	testenv.EnsureNamespace(t, cp.Client, ns)
	testenv.EnsureNamespace(t, cp.Client, "team-a")
	install := append([]string{"odh-serving", chartDir, "-n", ns, "-f", ciValues(t, chartDir)["services"]}, webhookArgs()...)
	uninstallOnFailure(t, ns)

	notes := helm.Must(t, append([]string{"install"}, install...)...)
	v := projectVersion(t)
	for _, want := range []string{
		"odh-serving " + v + " is installed in namespace odh-system.",
		"Image: quay.io/opendatahub/odh-serving:" + v + "\n",
		"Presets in odh-system: 14 shipped.",
		"external odh-system/kserve-ingress-gateway (class istio)",
		"Auth: on (the default).",
		"odh-system/chat: http://<external gateway address>/odh-system/chat/v1/chat/completions",
		"team-a/chat-pd: http://<external gateway address>/team-a/chat-pd/v1/chat/completions",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, notes)
		}
	}
	mustExist(t, gvkDeployment, ns, "odh-serving-controller")
	mustExist(t, gvkVWC, "", "odh-serving-validation")
	mustExist(t, schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"}, ns, "kserve-ingress-gateway")
	for _, roleNs := range []string{ns, "team-a"} {
		mustExist(t, schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}, roleNs, "odh-serving-controller")
	}
	if n := count(t, gvkPreset, ns); n != 14 {
		t.Errorf("%d presets in %s, want 14", n, ns)
	}
	chat := mustExist(t, gvkService, ns, "chat")
	if got := nested(t, chat, "spec", "replicas"); got != 2 {
		t.Errorf("chat has %d replicas, want 2", got)
	}
	mustExist(t, gvkService, "team-a", "chat-pd")
	mustNotExist(t, gvkService, ns, "retired")
	mustNotExist(t, gvkDeployment, ns, "chat-kserve") // no controller runs: no children
	checkControllerRights(t, ns)
	userService(t, ns, "users-own")

	helm.Must(t, append([]string{"upgrade"}, append(install,
		"--set", "services.chat.spec.replicas=3", "--set", "presets.config-llm-dp-cpu-simulator.enabled=false")...)...)
	if got := nested(t, mustExist(t, gvkService, ns, "chat"), "spec", "replicas"); got != 3 {
		t.Errorf("after the upgrade chat has %d replicas, want 3", got)
	}
	mustNotExist(t, gvkPreset, ns, "kserve-config-llm-dp-cpu-simulator")
	mustExist(t, gvkPreset, ns, "kserve-config-llm-pd-cpu-simulator")

	helm.Must(t, "uninstall", "odh-serving", "-n", ns)
	mustNotExist(t, gvkDeployment, ns, "odh-serving-controller")
	mustNotExist(t, gvkVWC, "", "odh-serving-validation")
	mustNotExist(t, gvkService, ns, "chat") // the release's own services go with it
	mustExist(t, gvkServiceV1, ns, "users-own")
	mustExist(t, schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "", "llminferenceservices.serving.kserve.io")
}

// TestInstallStaticMode installs odh-serving with odh-serving as Helm's
// post-renderer: the children are part of the release. An upgrade that
// changes the decode replicas changes the decode Deployment only.
func TestInstallStaticMode(t *testing.T) {
	const ns = "odh-static"
	testenv.EnsureNamespace(t, cp.Client, ns)
	install := staticInstall(t, ns)
	uninstallOnFailure(t, ns)

	helm.Must(t, append([]string{"install"}, install...)...)
	mustExist(t, gvkService, ns, "chat")
	decode := mustExist(t, gvkDeployment, ns, "chat-kserve")
	if got := nested(t, decode, "spec", "replicas"); got != 2 {
		t.Errorf("decode Deployment has %d replicas, want 2", got)
	}
	mustExist(t, gvkDeployment, ns, "chat-kserve-prefill")
	mustExist(t, gvkDeployment, ns, "chat-kserve-router-scheduler")
	mustExist(t, gvkCertificate, ns, "chat-kserve-workload-cert")
	for _, kind := range []string{"InferencePool", "HTTPRoute"} {
		group := map[string]string{"InferencePool": "inference.networking.k8s.io", "HTTPRoute": "gateway.networking.k8s.io"}[kind]
		if n := count(t, schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}, ns); n != 1 {
			t.Errorf("%d %s in %s, want 1", n, kind, ns)
		}
	}

	helm.Must(t, append([]string{"upgrade"}, append(install, "--set", "services.chat.spec.replicas=3")...)...)
	if got := nested(t, mustExist(t, gvkDeployment, ns, "chat-kserve"), "spec", "replicas"); got != 3 {
		t.Errorf("after the upgrade the decode Deployment has %d replicas, want 3", got)
	}
	if got := nested(t, mustExist(t, gvkDeployment, ns, "chat-kserve-prefill"), "spec", "replicas"); got != 1 {
		t.Errorf("after the upgrade the prefill Deployment has %d replicas, want 1", got)
	}

	helm.Must(t, "uninstall", "odh-serving", "-n", ns)
	mustNotExist(t, gvkDeployment, ns, "chat-kserve")
	mustNotExist(t, gvkService, ns, "chat")
}

// staticInstall are the arguments of `helm install` (or upgrade), after the
// verb, of odh-serving with ci/static-values.yaml in namespace, with
// odh-serving as Helm's post-renderer in static mode.
func staticInstall(t *testing.T, namespace string) []string {
	t.Helper()
	return append([]string{"odh-serving", chartDir, "-n", namespace, "-f", ciValues(t, chartDir)["static"],
		"--post-renderer", binary, "--post-renderer-args", "post-render", "--post-renderer-args=--mode=static",
		"--post-renderer-args=--namespace=" + namespace, "--post-renderer-args=--system-namespace=" + namespace,
		"--post-renderer-args=--cert-mode=cert-manager"}, webhookArgs()...)
}

// TestCRDsChartKeepsCRDs turns a CRD group off with an upgrade and then
// uninstalls odh-serving-crds: every CRD and the user's services stay, and
// the conversion webhook still answers for v1alpha1. It reinstalls the
// release at the end for the other tests.
func TestCRDsChartKeepsCRDs(t *testing.T) {
	const ns = "crd-keep"
	testenv.EnsureNamespace(t, cp.Client, ns)
	userService(t, ns, "kept")
	crdNames := []string{
		"llminferenceservices.serving.kserve.io", "llminferenceserviceconfigs.serving.kserve.io",
		"inferencepools.inference.networking.k8s.io", "inferencepools.inference.networking.x-k8s.io",
		"inferenceobjectives.inference.networking.x-k8s.io", "inferencemodelrewrites.inference.networking.x-k8s.io",
		"inferencepoolimports.inference.networking.x-k8s.io",
	}
	crdsExist := func(when string) {
		t.Helper()
		for _, name := range crdNames {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := cp.Client.Get(t.Context(), client.ObjectKey{Name: name}, crd); err != nil {
				t.Errorf("%s: CRD %s: %v", when, name, err)
			}
		}
		mustExist(t, gvkServiceV1, ns, "kept")
	}
	upgrade := append([]string{"upgrade", crdsRelease, crdsChartDir, "-n", crdsNamespace}, webhookArgs()...)

	helm.Must(t, append(upgrade, "--set", "createGIECRDs=false")...)
	crdsExist("after turning the GIE CRDs off")
	helm.Must(t, upgrade...) // takes the kept GIE CRDs back
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := cp.Client.Get(t.Context(), client.ObjectKey{Name: "llminferenceservices.serving.kserve.io"}, crd); err != nil {
		t.Fatal(err)
	}
	if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook.ClientConfig.URL == nil ||
		*c.Webhook.ClientConfig.URL != webhookURL+"/convert" {
		t.Errorf("conversion %+v, want the webhook at %s/convert", c, webhookURL)
	}

	// Every group on: Gateway API's and LWS's CRDs exist already (the control
	// plane installed them), so Helm has to take them over. The release
	// Secret holds the chart's files too; it must stay under 1 MiB.
	helm.Must(t, append(upgrade, "--take-ownership", "--set", "createGatewayAPICRDs=true", "--set", "createLWSCRDs=true")...)
	secrets := &corev1.SecretList{}
	if err := cp.Client.List(t.Context(), secrets, client.InNamespace(crdsNamespace), client.MatchingLabels{"owner": "helm", "name": crdsRelease}); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		size := len(s.Data["release"])
		t.Logf("release Secret %s: %d bytes", s.Name, size)
		if size > 1<<20-32<<10 {
			t.Errorf("release Secret %s holds %d bytes: less than 32 KiB below the 1 MiB limit", s.Name, size)
		}
	}

	helm.Must(t, "uninstall", crdsRelease, "-n", crdsNamespace)
	crdsExist("after the uninstall")
	helm.Must(t, append([]string{"install", crdsRelease, crdsChartDir, "-n", crdsNamespace}, webhookArgs()...)...)
	crdsExist("after installing again")
}
