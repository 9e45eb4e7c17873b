package overlays_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/internal/overlay"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// release is one helm template run of a chart under charts/.
type release struct {
	name, chart string
	args        []string
}

// bases are the streams each overlay is built over: both charts'
// output, as helm template gives it, in one stream. GIE's CRDs stay out:
// no overlay touches them, and they would triple expected.yaml.
var bases = map[string][]release{
	// A release outside opendatahub, which the overlay moves there.
	"odh": {
		{name: "odh-serving-crds", chart: "odh-serving-crds", args: noGIE},
		{name: "odh-serving", chart: "odh-serving", args: []string{"--namespace", "llm-platform"}},
	},
	// The internal gateway on, and Gateway API CRDs in the stream, which
	// the overlay drops.
	"openshift": {
		{name: "odh-serving-crds", chart: "odh-serving-crds", args: append([]string{"--set", "createGatewayAPICRDs=true"}, noGIE...)},
		{name: "odh-serving", chart: "odh-serving", args: []string{"--namespace", "opendatahub", "--set", "gateways.internal.create=true"}},
	},
	"kubernetes": {
		{name: "odh-serving-crds", chart: "odh-serving-crds", args: noGIE},
		{name: "odh-serving", chart: "odh-serving", args: []string{"--namespace", "llm-platform"}},
	},
}

var noGIE = []string{"--set", "createGIECRDs=false"}

func helmTemplate(t *testing.T, rels []release) []byte {
	t.Helper()
	helm := testenv.HelmFor(t, "helm", "")
	var stream strings.Builder
	for _, r := range rels {
		stream.WriteString(helm.Must(t, append([]string{"template", r.name, filepath.Join("..", "..", "charts", r.chart)}, r.args...)...))
	}
	return []byte(stream.String())
}

// build applies the built-in overlay name over its base.
func build(t *testing.T, name string) (base, out []byte) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("..", "..", "charts", "odh-serving", "Chart.yaml")); err != nil {
		t.Fatalf("the chart is missing: %v", err)
	}
	base = helmTemplate(t, bases[name])
	o, err := overlay.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	out, err = o.Apply(base)
	if err != nil {
		t.Fatal(err)
	}
	return base, out
}

// TestOverlaysExpected builds each overlay over the charts' output and
// compares it with overlays/<name>/expected.yaml (-update rewrites it),
// then builds the same with the real kustomize CLI, which must give the
// same bytes: the overlays are plain kustomize components.
func TestOverlaysExpected(t *testing.T) {
	for _, name := range overlay.Builtins() {
		t.Run(name, func(t *testing.T) {
			base, out := build(t, name)
			golden.Assert(t, filepath.Join("..", "..", "overlays", name, "expected.yaml"), out)

			kustomize, err := exec.LookPath("kustomize")
			if err != nil {
				t.Fatalf("kustomize is not on PATH: %v", err)
			}
			dir := t.TempDir()
			write := func(file string, data []byte) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write("base.yaml", base)
			abs, err := filepath.Abs(filepath.Join("..", "..", "overlays", name))
			if err != nil {
				t.Fatal(err)
			}
			rel, err := filepath.Rel(dir, abs)
			if err != nil {
				t.Fatal(err)
			}
			write("kustomization.yaml", []byte("resources: [base.yaml]\ncomponents: ["+rel+"]\nsortOptions: {order: fifo}\n"))
			cmd := exec.CommandContext(t.Context(), kustomize, "build", dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("kustomize build: %v\n%s", err, stderr.String())
			}
			if diff := cmp.Diff(stdout.String(), string(out)); diff != "" {
				t.Errorf("kustomize build differs from post-render's in-memory build (-kustomize +ours):\n%s", diff)
			}
		})
	}
}

func split(t *testing.T, out []byte) []*unstructured.Unstructured {
	t.Helper()
	docs, err := manifest.Split("overlay output", out)
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]*unstructured.Unstructured, len(docs))
	for i, d := range docs {
		objs[i] = d.Object
	}
	return objs
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in the output", kind, name)
	return nil
}

// flag is the value the controller sees for --name: the last one given.
func flag(t *testing.T, objs []*unstructured.Unstructured, name string) string {
	t.Helper()
	d := find(t, objs, "Deployment", "odh-serving-controller")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	value := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			value = v
		}
	}
	return value
}

func str(o *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedString(o.Object, path...)
	return v
}

func webhookCertMounted(t *testing.T, objs []*unstructured.Unstructured) bool {
	t.Helper()
	d := find(t, objs, "Deployment", "odh-serving-controller")
	volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	for _, v := range volumes {
		if name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName"); name == "odh-serving-webhook-cert" {
			return true
		}
	}
	return false
}

func TestODHOverlay(t *testing.T) {
	base, out := build(t, "odh")
	objs := split(t, out)
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" && ns != "opendatahub" {
			t.Errorf("%s %s is in %s, want opendatahub", o.GetKind(), o.GetName(), ns)
		}
		if o.GetName() == "odh-serving-webhook" {
			t.Errorf("%s odh-serving-webhook keeps the chart's name", o.GetKind())
		}
	}
	if strings.Contains(string(out), "odh-serving-webhook.") || strings.Contains(string(out), "name: odh-serving-webhook\n") {
		t.Error("something still refers to the Service odh-serving-webhook")
	}
	find(t, objs, "Service", "llmisvc-webhook-server-service")
	vwc := find(t, objs, "ValidatingWebhookConfiguration", "odh-serving-validation")
	hooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
	svc, _, _ := unstructured.NestedMap(hooks[0].(map[string]any), "clientConfig", "service")
	if svc["name"] != "llmisvc-webhook-server-service" || svc["namespace"] != "opendatahub" {
		t.Errorf("validating webhook calls %v", svc)
	}
	for _, crd := range []string{"llminferenceservices.serving.kserve.io", "llminferenceserviceconfigs.serving.kserve.io"} {
		c := find(t, objs, "CustomResourceDefinition", crd)
		if n, ns := str(c, "spec", "conversion", "webhook", "clientConfig", "service", "name"), str(c, "spec", "conversion", "webhook", "clientConfig", "service", "namespace"); n != "llmisvc-webhook-server-service" || ns != "opendatahub" {
			t.Errorf("%s converts through %s/%s", crd, ns, n)
		}
	}
	crb := find(t, objs, "ClusterRoleBinding", "odh-serving-controller")
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	if ns, _, _ := unstructured.NestedString(subjects[0].(map[string]any), "namespace"); ns != "opendatahub" {
		t.Errorf("the ClusterRoleBinding's subject is in %s", ns)
	}
	for name, want := range map[string]string{
		"system-namespace": "opendatahub", "leader-election-namespace": "opendatahub", "ingress-gateway-namespace": "opendatahub",
		"webhook-service-name": "llmisvc-webhook-server-service",
	} {
		if got := flag(t, objs, name); got != want {
			t.Errorf("--%s=%s, want %s", name, got, want)
		}
	}
	checkAuthOn(t, out)
	// The helm test script is the chart's, with the ODH names.
	chartScript := testScript(t, split(t, base))
	want := strings.ReplaceAll(strings.ReplaceAll(chartScript, "odh-serving-webhook.llm-platform.", "llmisvc-webhook-server-service.opendatahub."), ".llm-platform.", ".opendatahub.")
	if got := testScript(t, objs); got != want {
		t.Errorf("helm-test.yaml drifted from the chart's test script (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// checkAuthOn: the overlay runs the controller with --enable-auth and
// gives it the rights on AuthPolicies (docs/auth.md).
func checkAuthOn(t *testing.T, out []byte) {
	t.Helper()
	if !strings.Contains(string(out), "- --enable-auth\n") {
		t.Error("the controller runs without --enable-auth")
	}
	if !strings.Contains(string(out), "  - kuadrant.io\n  resources:\n  - authpolicies\n") {
		t.Error("the controller's ClusterRole has no rule for kuadrant.io authpolicies")
	}
}

func testScript(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	pod := find(t, objs, "Pod", "odh-serving-test")
	containers, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
	cmd, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "command")
	return cmd[len(cmd)-1]
}

func TestOpenShiftOverlay(t *testing.T) {
	base, out := build(t, "openshift")
	if !strings.Contains(string(base), "gateway.networking.k8s.io\n  names:") {
		t.Fatal("the base has no Gateway API CRDs; the test needs them to see them dropped")
	}
	objs := split(t, out)
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" && strings.HasSuffix(o.GetName(), ".gateway.networking.k8s.io") {
			t.Errorf("the Gateway API CRD %s is still there", o.GetName())
		}
		if o.GetKind() == "Gateway" && str(o, "spec", "gatewayClassName") != "openshift-default" {
			t.Errorf("Gateway %s has class %s", o.GetName(), str(o, "spec", "gatewayClassName"))
		}
	}
	if got := find(t, objs, "Service", "odh-serving-webhook").GetAnnotations()["service.beta.openshift.io/serving-cert-secret-name"]; got != "odh-serving-webhook-cert" {
		t.Errorf("webhook Service serving-cert annotation %q", got)
	}
	for _, o := range []*unstructured.Unstructured{
		find(t, objs, "ValidatingWebhookConfiguration", "odh-serving-validation"),
		find(t, objs, "CustomResourceDefinition", "llminferenceservices.serving.kserve.io"),
		find(t, objs, "CustomResourceDefinition", "llminferenceserviceconfigs.serving.kserve.io"),
	} {
		if o.GetAnnotations()["service.beta.openshift.io/inject-cabundle"] != "true" {
			t.Errorf("%s %s: no inject-cabundle annotation", o.GetKind(), o.GetName())
		}
	}
	params := str(find(t, objs, "ConfigMap", "kserve-internal-gateway-parameters"), "data", "service")
	for _, want := range []string{"serving-cert-secret-name: kserve-internal-gateway-tls", "type: ClusterIP"} {
		if !strings.Contains(params, want) {
			t.Errorf("the internal gateway's Service parameters lack %q:\n%s", want, params)
		}
	}
	if got := flag(t, objs, "cert-mode"); got != "service-ca" {
		t.Errorf("--cert-mode=%s", got)
	}
	checkAuthOn(t, out)
	if !webhookCertMounted(t, objs) {
		t.Error("the controller does not mount odh-serving-webhook-cert")
	}
}

func TestKubernetesOverlay(t *testing.T) {
	_, out := build(t, "kubernetes")
	objs := split(t, out)
	cert := find(t, objs, "Certificate", "odh-serving-webhook-cert")
	names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	want := []string{"odh-serving-webhook", "odh-serving-webhook.llm-platform", "odh-serving-webhook.llm-platform.svc", "odh-serving-webhook.llm-platform.svc.cluster.local"}
	if cert.GetNamespace() != "llm-platform" || !cmp.Equal(names, want) {
		t.Errorf("webhook Certificate in %q for %q", cert.GetNamespace(), names)
	}
	find(t, objs, "ClusterIssuer", "odh-serving-ca")
	for _, o := range []*unstructured.Unstructured{
		find(t, objs, "ValidatingWebhookConfiguration", "odh-serving-validation"),
		find(t, objs, "CustomResourceDefinition", "llminferenceservices.serving.kserve.io"),
		find(t, objs, "CustomResourceDefinition", "llminferenceserviceconfigs.serving.kserve.io"),
	} {
		if got := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "llm-platform/odh-serving-webhook-cert" {
			t.Errorf("%s %s: inject-ca-from %q", o.GetKind(), o.GetName(), got)
		}
	}
	for name, want := range map[string]string{"cert-mode": "cert-manager", "cert-issuer-kind": "ClusterIssuer", "cert-issuer-name": "odh-serving-ca"} {
		if got := flag(t, objs, name); got != want {
			t.Errorf("--%s=%s, want %s", name, got, want)
		}
	}
	if !webhookCertMounted(t, objs) {
		t.Error("the controller does not mount odh-serving-webhook-cert")
	}
	if strings.Contains(string(out), "SYSTEM_NAMESPACE") {
		t.Error("a SYSTEM_NAMESPACE placeholder is left")
	}
}

// TestOverlaysDryRun applies every object of every overlay's output to the
// API server as a server-side dry run: CRDs, RBAC, the controller, the
// webhook configuration, the presets (through the validating webhook),
// gateways and cert-manager objects.
func TestOverlaysDryRun(t *testing.T) {
	for _, ns := range []string{"opendatahub", "llm-platform", "cert-manager"} {
		testenv.EnsureNamespace(t, cp.Client, ns)
	}
	for _, name := range overlay.Builtins() {
		t.Run(name, func(t *testing.T) {
			_, out := build(t, name)
			for _, o := range split(t, out) {
				if err := dryRun(t, o); err != nil {
					t.Errorf("%s %s rejected: %v", o.GetKind(), o.GetName(), err)
				}
			}
		})
	}
}

// dryRun applies o as a dry run. The control plane made our CRDs and the
// validating webhook configuration itself (calling the test's webhook
// server by URL), so those are replaced whole, as a first install would
// write them, instead of merged with what is there.
func dryRun(t *testing.T, o *unstructured.Unstructured) error {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(o), live)
	if err == nil && (o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "ValidatingWebhookConfiguration") {
		o.SetResourceVersion(live.GetResourceVersion())
		return cp.Client.Update(t.Context(), o, client.DryRunAll)
	}
	return cp.Client.Patch(t.Context(), o, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner("odh-serving-test"))
}

// TestOverlaysOnEachChart builds each overlay over each chart's output
// alone, as a post-renderer of one release sees it: the patches find no
// target and leave the stream be. Only kubernetes needs the controller's
// Deployment (its namespace) and says so.
func TestOverlaysOnEachChart(t *testing.T) {
	for _, name := range overlay.Builtins() {
		o, err := overlay.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, rel := range bases[name] {
			t.Run(name+"/"+rel.chart, func(t *testing.T) {
				_, err := o.Apply(helmTemplate(t, []release{rel}))
				if name == "kubernetes" && rel.chart == "odh-serving-crds" {
					if err == nil || !strings.Contains(err.Error(), "odh-serving-controller") {
						t.Errorf("want an error naming the missing Deployment, got %v", err)
					}
					return
				}
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
}
