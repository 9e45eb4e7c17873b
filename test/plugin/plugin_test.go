package plugin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/cli"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// setup returns Helm 4 with its own homes, in which the plugin from
// plugin/odh-serving is installed with a fresh odh-serving build.
func setup(t *testing.T) *testenv.Helm {
	t.Helper()
	h := testenv.HelmFor(t, "helm4", testenv.Kubeconfig(t, cp.Config, ""))

	// The plugin as shipped, with the binary make install-plugin builds.
	dir := filepath.Join(t.TempDir(), "odh-serving")
	manifestFile, err := os.ReadFile(filepath.Join("..", "..", "plugin", "odh-serving", "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), manifestFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := testenv.BuildCommand(t.Context(), "odh-serving-render", filepath.Join(dir, "bin", "odh-serving-render")); err != nil {
		t.Fatal(err)
	}
	h.Must(t, "plugin", "install", dir)
	if list := h.Must(t, "plugin", "list"); !strings.Contains(list, "postrenderer/v1") {
		t.Fatalf("helm4 plugin list does not show the plugin:\n%s", list)
	}
	return h
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
		if d.Object.GetKind() == "HTTPRoute" && d.Object.GetAnnotations()[cli.WeightsManagedByAnnotation] != "controller" {
			t.Errorf("HTTPRoute %s lacks %s", d.Object.GetName(), cli.WeightsManagedByAnnotation)
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
	if route.Annotations[cli.WeightsManagedByAnnotation] != "controller" {
		t.Errorf("the installed route lacks %s", cli.WeightsManagedByAnnotation)
	}

	h.Must(t, append([]string{"upgrade", "demo", "--set", "replicas=3"}, args...)...)
	if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(workload), workload); err != nil {
		t.Fatal(err)
	}
	if *workload.Spec.Replicas != 3 {
		t.Errorf("after the upgrade replicas %d, want 3", *workload.Spec.Replicas)
	}
}
