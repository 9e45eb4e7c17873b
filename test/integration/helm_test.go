package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestIntegrationHelmPostRender runs the real helm CLI with odh-serving as
// its post-renderer in static mode, and applies what comes out to the API
// server as a server-side dry run.
func TestIntegrationHelmPostRender(t *testing.T) {
	helm := testenv.HelmFor(t, "helm", "")
	bin := filepath.Join(t.TempDir(), "odh-serving")
	if err := testenv.BuildCommand(t.Context(), "odh-serving", bin); err != nil {
		t.Fatal(err)
	}
	stdout := helm.Must(t, "template", "demo", "testdata/chart", "--namespace", "helm-demo",
		"--post-renderer", bin,
		"--post-renderer-args", "post-render", "--post-renderer-args", "--mode=static", "--post-renderer-args", "--namespace=helm-demo")
	docs, err := manifest.Split("helm-output", []byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	testenv.EnsureNamespace(t, cp.Client, "helm-demo")
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
	if !strings.Contains(stdout, "- publishers/helm-demo/models/demo-model") {
		t.Error("the simulator preset did not give the model its publisher name in the simulator's flags")
	}
}
