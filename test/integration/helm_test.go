package integration

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
)

// TestIntegrationHelmPostRender runs the real helm CLI with odh-serving as
// its post-renderer in static mode, and applies what comes out to the API
// server as a server-side dry run.
func TestIntegrationHelmPostRender(t *testing.T) {
	helm, err := exec.LookPath("helm")
	if err != nil {
		t.Fatalf("helm is not on PATH; run the tests with `make test`: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "odh-serving")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../../cmd/odh-serving").CombinedOutput(); err != nil {
		t.Fatalf("build odh-serving: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(t.Context(), helm, "template", "demo", "testdata/chart", "--namespace", "helm-demo",
		"--post-renderer", bin,
		"--post-renderer-args", "post-render", "--post-renderer-args", "--mode=static", "--post-renderer-args", "--namespace=helm-demo")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	docs, err := manifest.Split("helm-output", stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	ensureNamespace(t, "helm-demo")
	for _, d := range docs {
		kinds[d.Object.GetKind()]++
		obj := d.Object.DeepCopy()
		if obj.GetNamespace() == "" && obj.GetKind() != "ClusterRoleBinding" {
			obj.SetNamespace("helm-demo") // helm install sets the release namespace
		}
		if err := cp.Client.Patch(t.Context(), obj, client.Apply, client.DryRunAll, client.FieldOwner("odh-serving-test")); err != nil {
			t.Errorf("%s %s rejected: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	for kind, n := range map[string]int{"LLMInferenceService": 1, "LLMInferenceServiceConfig": 1, "Deployment": 2, "InferencePool": 2, "HTTPRoute": 1} {
		if kinds[kind] != n {
			t.Errorf("%d %s in the output, want %d (all kinds: %v)", kinds[kind], kind, n, kinds)
		}
	}
	if !strings.Contains(stdout.String(), "--served-model-name=demo-model") {
		t.Error("the team preset from the chart did not reach the simulator's flags")
	}
}
