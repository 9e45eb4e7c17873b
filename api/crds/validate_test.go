package crds_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/api/crds"
	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestValidatorAppliesSchemaAndCEL(t *testing.T) {
	v, err := crds.LoadValidator(crds.GIE)
	if err != nil {
		t.Fatal(err)
	}
	pool := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
			"metadata": map[string]any{"name": "p", "namespace": "ns"}, "spec": spec,
		}}
	}
	good := pool(map[string]any{
		"selector":          map[string]any{"matchLabels": map[string]any{"app": "x"}},
		"targetPorts":       []any{map[string]any{"number": int64(8000)}},
		"endpointPickerRef": map[string]any{"name": "epp", "port": map[string]any{"number": int64(9002)}},
	})
	if errs := v.Validate(t.Context(), good); len(errs) > 0 {
		t.Fatalf("a valid pool was rejected: %v", errs)
	}
	tests := map[string]struct {
		spec map[string]any
		want string
	}{
		"port out of range (schema)": {
			spec: map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "x"}}, "targetPorts": []any{map[string]any{"number": int64(70000)}}, "endpointPickerRef": map[string]any{"name": "epp", "port": map[string]any{"number": int64(9002)}}},
			want: "spec.targetPorts[0].number",
		},
		"no endpoint picker port (CEL)": {
			spec: map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "x"}}, "targetPorts": []any{map[string]any{"number": int64(8000)}}, "endpointPickerRef": map[string]any{"name": "epp"}},
			want: "port is required when kind is 'Service'",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := v.Validate(t.Context(), pool(tc.spec))
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}
