package plugin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// setup returns Helm 4 with its own homes, in which the plugin from
// plugin/odh-serving is installed with a fresh odh-serving build.
func setup(t *testing.T) *testenv.Helm {
	t.Helper()
	h, _ := setupWithBinary(t)
	return h
}

// setupWithBinary is setup that also returns the plugin's binary, which
// Helm 3 runs as its post-renderer.
func setupWithBinary(t *testing.T) (*testenv.Helm, string) {
	t.Helper()
	h := testenv.HelmFor(t, "helm4", testenv.Kubeconfig(t, cp.Config, ""))

	// The plugin as shipped, with the binary make install-plugin builds.
	dir := filepath.Join(t.TempDir(), "odh-serving")
	manifestFile := golden.Read(t, filepath.Join("..", "..", "plugin", "odh-serving", "plugin.yaml"))
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), manifestFile, 0o600); err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(dir, "bin", "odh-serving-render")
	if err := testenv.BuildCommand(t.Context(), "odh-serving-render", binary); err != nil {
		t.Fatal(err)
	}
	h.Must(t, "plugin", "install", dir)
	if list := h.Must(t, "plugin", "list"); !strings.Contains(list, "postrenderer/v1") {
		t.Fatalf("helm4 plugin list does not show the plugin:\n%s", list)
	}
	return h, binary
}

var static = []string{"--post-renderer", "odh-serving", "--post-renderer-args", "--mode=static"}

func TestHelm4Template(t *testing.T) {
	h := setup(t)
	out := h.Must(t, append([]string{"template", "demo", "testdata/chart", "--namespace", "plugin-demo",
		"--post-renderer-args", "--namespace=plugin-demo"}, static...)...)
	docs, err := manifest.Split("helm4 template", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, d := range docs {
		kinds[d.Object.GetKind()]++
		if d.Object.GetKind() == "HTTPRoute" && d.Object.GetAnnotations()[convention.AnnotationWeightsManagedBy] != "controller" {
			t.Errorf("HTTPRoute %s lacks %s", d.Object.GetName(), convention.AnnotationWeightsManagedBy)
		}
	}
	for kind, n := range map[string]int{"LLMInferenceService": 1, "Deployment": 2, "InferencePool": 2, "HTTPRoute": 1} {
		if kinds[kind] != n {
			t.Errorf("%d %s in the output, want %d (all: %v)", kinds[kind], kind, n, kinds)
		}
	}
}

// TestHelm4InstallAndUpgrade installs the chart with the plugin in static
// mode, so Helm creates the children, then upgrades it with another
// replica count, which reaches the Deployment.
func TestHelm4InstallAndUpgrade(t *testing.T) {
	h := setup(t)
	const ns = "plugin-install"
	testenv.EnsureNamespace(t, cp.Client, ns)
	args := append([]string{"testdata/chart", "--namespace", ns, "--wait=false", "--post-renderer-args", "--namespace=" + ns}, static...)
	h.Must(t, append([]string{"install", "demo"}, args...)...)

	workload := &appsv1.Deployment{}
	if err := cp.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo-sim-kserve"}, workload); err != nil {
		t.Fatalf("the plugin's children are not in the cluster: %v", err)
	}
	if *workload.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *workload.Spec.Replicas)
	}
	route := &gatewayv1.HTTPRoute{}
	if err := cp.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "demo-sim-kserve-route"}, route); err != nil {
		t.Fatal(err)
	}
	if route.Annotations[convention.AnnotationWeightsManagedBy] != "controller" {
		t.Errorf("the installed route lacks %s", convention.AnnotationWeightsManagedBy)
	}

	h.Must(t, append([]string{"upgrade", "demo", "--set", "replicas=3"}, args...)...)
	if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(workload), workload); err != nil {
		t.Fatal(err)
	}
	if *workload.Spec.Replicas != 3 {
		t.Errorf("after the upgrade replicas %d, want 3", *workload.Spec.Replicas)
	}
}

// TestUpgradeKeepsAutoscaledReplicas: in static mode a service with
// spec.scaling renders its HPA and a Deployment without replicas, so a
// helm upgrade leaves the count the HPA chose alone, with Helm 4's plugin
// and with Helm 3's post-renderer executable alike. The HPA's scale is
// simulated (the scale subresource, as kube-controller-manager).
func TestUpgradeKeepsAutoscaledReplicas(t *testing.T) {
	h4, binary := setupWithBinary(t)
	h3 := testenv.HelmFor(t, "helm", testenv.Kubeconfig(t, cp.Config, ""))
	for _, c := range []struct {
		name, ns string
		helm     *testenv.Helm
		renderer []string
	}{
		{"helm4 plugin", "plugin-scaled-4", h4, static},
		{"helm3 post-renderer", "plugin-scaled-3", h3, []string{"--post-renderer", binary, "--post-renderer-args", "post-render", "--post-renderer-args", "--mode=static"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testenv.EnsureNamespace(t, cp.Client, c.ns)
			args := append([]string{"testdata/chart", "--namespace", c.ns, "--wait=false", "--post-renderer-args", "--namespace=" + c.ns}, c.renderer...)
			scaling := func(max int) []string {
				return []string{"--set-json", fmt.Sprintf(`scaling={"minReplicas":1,"maxReplicas":%d,"wva":{"hpa":{}}}`, max)}
			}
			c.helm.Must(t, append(append([]string{"install", "demo"}, args...), scaling(8)...)...)
			ctx := t.Context()
			hpa := &autoscalingv2.HorizontalPodAutoscaler{}
			if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "demo-sim-kserve-hpa"}, hpa); err != nil {
				t.Fatalf("the release has no HPA: %v", err)
			}
			workload := &appsv1.Deployment{}
			key := client.ObjectKey{Namespace: c.ns, Name: "demo-sim-kserve"}
			if err := cp.Client.Get(ctx, key, workload); err != nil {
				t.Fatal(err)
			}
			s := &autoscalingv1.Scale{}
			if err := cp.Client.SubResource("scale").Get(ctx, workload, s); err != nil {
				t.Fatal(err)
			}
			s.Spec.Replicas = 5
			if err := cp.Client.SubResource("scale").Update(ctx, workload, client.WithSubResourceBody(s), client.FieldOwner("kube-controller-manager")); err != nil {
				t.Fatal(err)
			}

			c.helm.Must(t, append(append([]string{"upgrade", "demo"}, args...), scaling(9)...)...)
			if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(hpa), hpa); err != nil {
				t.Fatal(err)
			}
			if hpa.Spec.MaxReplicas != 9 {
				t.Errorf("after the upgrade the HPA's maxReplicas is %d, want 9: the upgrade did not apply", hpa.Spec.MaxReplicas)
			}
			if err := cp.Client.Get(ctx, key, workload); err != nil {
				t.Fatal(err)
			}
			if *workload.Spec.Replicas != 5 {
				t.Errorf("after the upgrade the Deployment has %d replicas, want the HPA's 5", *workload.Spec.Replicas)
			}
		})
	}
}
