package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/cli"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestIntegrationPresetsListCluster lists presets from the API server and
// shows which namespace shadows a system preset.
func TestIntegrationPresetsListCluster(t *testing.T) {
	team := testenv.NewNamespace(t, cp.Client, "it")
	testenv.EnsureNamespace(t, cp.Client, "opendatahub")
	for _, cfg := range []*v1alpha2.LLMInferenceServiceConfig{
		{ObjectMeta: metav1.ObjectMeta{Name: "kserve-config-llm-template", Namespace: team}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-gpus", Namespace: team}},
		{ObjectMeta: metav1.ObjectMeta{Name: "platform-h100", Namespace: "opendatahub"}},
	} {
		if err := cp.Client.Create(t.Context(), cfg); err != nil {
			t.Fatalf("create %s/%s: %v", cfg.Namespace, cfg.Name, err)
		}
		// opendatahub is shared: leave it as it was, for the next run (-count).
		t.Cleanup(func() {
			if err := cp.Client.Delete(context.Background(), cfg); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s/%s: %v", cfg.Namespace, cfg.Name, err)
			}
		})
	}
	var out, errOut bytes.Buffer
	code := cli.Main([]string{"presets", "list", "--kubeconfig", testenv.Kubeconfig(t, cp.Config, "")}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(out.String(), "\n")
	find := func(name, ns string) string {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == name && f[1] == ns {
				return l
			}
		}
		return ""
	}
	if l := find("kserve-config-llm-template", team); !strings.Contains(l, "cluster") || !strings.Contains(l, "shadows the system preset in namespace "+team) {
		t.Errorf("the team's copy of the single-node preset: %q", l)
	}
	if l := find("team-gpus", team); !strings.Contains(l, "cluster") || strings.Contains(l, "shadows") {
		t.Errorf("team-gpus: %q", l)
	}
	if l := find("platform-h100", "opendatahub"); !strings.Contains(l, "cluster") {
		t.Errorf("platform-h100: %q", l)
	}
	if l := find("kserve-config-llm-template", "opendatahub"); !strings.Contains(l, "built-in") {
		t.Errorf("the built-in single-node preset: %q", l)
	}
}
