package gitops_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/migration"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestMigrationOwnsAllRules shows on a real API server why docs/gitops.md
// ignores the route weights by jq path and not by managedFieldsManagers:
// after Argo CD (field manager argocd-controller) applies a route and the
// controller moves one weight, odh-serving-migration owns all of
// spec.rules, because Gateway API makes the list atomic.
func TestMigrationOwnsAllRules(t *testing.T) {
	const ns = "gitops-routes"
	testenv.EnsureNamespace(t, cp.Client, ns)
	pool := func(group string, weight int64) map[string]any {
		return map[string]any{"group": group, "kind": "InferencePool", "name": "chat-inference-pool", "port": int64(8000), "weight": weight}
	}
	route := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1",
		"kind":       "HTTPRoute",
		"metadata":   map[string]any{"name": "chat-kserve-route", "namespace": ns},
		"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": "kserve-ingress-gateway", "namespace": "opendatahub"}},
			"rules": []any{
				map[string]any{
					"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/" + ns + "/chat/v1/completions"}}},
					"backendRefs": []any{pool(build.GroupPoolV1, 0), pool(build.GroupPoolV1alpha2, 100)},
				},
				map[string]any{
					"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/" + ns + "/chat"}}},
					"backendRefs": []any{map[string]any{"kind": "Service", "name": "chat-kserve-workload-svc", "port": int64(8000)}},
				},
			},
		},
	}}
	if err := cp.Client.Patch(t.Context(), route, client.Apply, client.FieldOwner("argocd-controller"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	typed := &gatewayv1.HTTPRoute{}
	if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(route), typed); err != nil {
		t.Fatal(err)
	}
	changed, err := migration.ApplyWeights(t.Context(), cp.Client, typed, convention.PhaseV1)
	if err != nil || !changed {
		t.Fatalf("ApplyWeights: changed %v, %v", changed, err)
	}
	if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(route), typed); err != nil {
		t.Fatal(err)
	}
	owns := map[string]bool{}
	for _, f := range typed.ManagedFields {
		if f.FieldsV1 != nil && strings.Contains(string(f.FieldsV1.Raw), `"f:rules"`) {
			owns[f.Manager] = true
		}
	}
	if !owns[convention.MigrationFieldManager] || owns["argocd-controller"] {
		t.Errorf("owners of spec.rules: %v; want %s alone (the whole atomic list)", owns, convention.MigrationFieldManager)
	}
}
