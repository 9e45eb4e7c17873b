package integration

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestIntegrationGoldenOutputsApply applies every object of every engine
// golden case, every preset's expected output and the rendered examples to
// the real API server as a server-side dry run, so the real
// CRD schemas (GIE, Gateway API, LWS, Istio's DestinationRule, the
// Prometheus Operator's monitors, Kuadrant's AuthPolicy) and the built-in
// types judge them.
func TestIntegrationGoldenOutputsApply(t *testing.T) {
	testenv.InstallCRDs(t, cp.Client, append(controlplane.PlatformCRDs, crds.Kuadrant)...)
	files := golden.Glob(t, "../../engine/testdata/*/expected.yaml")
	presetOutputs := golden.Glob(t, "../../presets/*/expected.yaml")
	files = append(append(files, presetOutputs...), "../../internal/cli/testdata/examples.yaml")
	applied := 0
	// The API server's answer to each distinct object, by its JSON: the
	// golden files repeat many objects (a preset's output in the engine's
	// cases and its own, shared children), and a dry run changes nothing,
	// so an object judged once is judged for every file that holds it.
	verdicts := map[string]error{}
	for _, file := range files {
		t.Run(filepath.Base(filepath.Dir(file))+"/"+filepath.Base(file), func(t *testing.T) {
			data := golden.Read(t, file)
			docs, err := manifest.Split(file, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				key, err := json.Marshal(d.Object.Object)
				if err != nil {
					t.Fatalf("%s: %v", d.Where(), err)
				}
				verdict, judged := verdicts[string(key)]
				if !judged {
					if ns := d.Object.GetNamespace(); ns != "" {
						testenv.EnsureNamespace(t, cp.Client, ns)
					}
					obj := d.Object.DeepCopy()
					verdict = cp.Client.Patch(t.Context(), obj, client.Apply, client.DryRunAll, client.FieldOwner("odh-serving-test"), client.ForceOwnership)
					verdicts[string(key)] = verdict
				}
				if verdict != nil {
					t.Errorf("%s: %s %s rejected: %v", d.Where(), d.Object.GetKind(), d.Object.GetName(), verdict)
					continue
				}
				applied++
			}
		})
	}
	t.Logf("%d objects accepted by the API server (%d distinct objects sent)", applied, len(verdicts))

	// The same dry run rejects what the v1 InferencePool CRD forbids, so the
	// acceptances above mean something.
	testenv.EnsureNamespace(t, cp.Client, "dry-run-check")
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
		"metadata": map[string]any{"name": "no-selector", "namespace": "dry-run-check"},
		"spec": map[string]any{
			"selector":          map[string]any{},
			"targetPorts":       []any{map[string]any{"number": int64(8000)}},
			"endpointPickerRef": map[string]any{"name": "epp"},
		},
	}}
	if err := cp.Client.Patch(t.Context(), bad, client.Apply, client.DryRunAll, client.FieldOwner("odh-serving-test")); err == nil {
		t.Error("a v1 InferencePool with an empty selector and no endpoint picker port must be rejected")
	}
	// And so do Istio's, the Prometheus Operator's and Kuadrant's schemas.
	for _, bad := range []*unstructured.Unstructured{
		{Object: map[string]any{
			"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
			"metadata": map[string]any{"name": "bad-mode", "namespace": "dry-run-check"},
			"spec":     map[string]any{"host": "x", "trafficPolicy": map[string]any{"tls": map[string]any{"mode": "VERIFY"}}},
		}},
		{Object: map[string]any{
			"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
			"metadata": map[string]any{"name": "bad-scheme", "namespace": "dry-run-check"},
			"spec":     map[string]any{"selector": map[string]any{}, "podMetricsEndpoints": []any{map[string]any{"scheme": "ftp"}}},
		}},
		// An AuthPolicy may target only routes and gateways (a CEL rule).
		{Object: map[string]any{
			"apiVersion": "kuadrant.io/v1", "kind": "AuthPolicy",
			"metadata": map[string]any{"name": "bad-target", "namespace": "dry-run-check"},
			"spec": map[string]any{
				"targetRef": map[string]any{"group": "gateway.networking.k8s.io", "kind": "Service", "name": "x"},
				"rules":     map[string]any{"authentication": map[string]any{"public": map[string]any{"anonymous": map[string]any{}}}},
			},
		}},
	} {
		if err := cp.Client.Patch(t.Context(), bad, client.Apply, client.DryRunAll, client.FieldOwner("odh-serving-test")); err == nil {
			t.Errorf("%s %s must be rejected", bad.GetKind(), bad.GetName())
		}
	}
}
