package crds_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

func TestValidatorAppliesSchemaAndCEL(t *testing.T) {
	v, err := crds.LoadValidator(crds.GIE)
	if err != nil {
		t.Fatal(err)
	}
	// valid is a pool spec both the schema and the CEL rules accept; each
	// case edits it.
	valid := func() map[string]any {
		return map[string]any{
			"selector":          map[string]any{"matchLabels": map[string]any{"app": "x"}},
			"targetPorts":       []any{map[string]any{"number": int64(8000)}},
			"endpointPickerRef": map[string]any{"name": "epp", "port": map[string]any{"number": int64(9002)}},
		}
	}
	tests := map[string]struct {
		edit func(spec map[string]any)
		want string // empty: valid
	}{
		"valid": {},
		"port out of range (schema)": {
			edit: func(spec map[string]any) { spec["targetPorts"] = []any{map[string]any{"number": int64(70000)}} },
			want: "spec.targetPorts[0].number",
		},
		"no endpoint picker port (CEL)": {
			edit: func(spec map[string]any) { spec["endpointPickerRef"] = map[string]any{"name": "epp"} },
			want: "port is required when kind is 'Service'",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := valid()
			if tc.edit != nil {
				tc.edit(spec)
			}
			pool := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
				"metadata": map[string]any{"name": "p", "namespace": "ns"}, "spec": spec,
			}}
			golden.ErrorCase(t, v.Validate(t.Context(), pool).ToAggregate(), tc.want)
		})
	}
}

// TestLoadValidatorShared: a second LoadValidator of the same sets returns
// the Validator the first made (compiling the CRDs takes a second or more,
// and `presets lint` makes one per run), and other sets get their own.
func TestLoadValidatorShared(t *testing.T) {
	first, err := crds.LoadValidator(crds.GIE, crds.KEDA)
	if err != nil {
		t.Fatal(err)
	}
	again, err := crds.LoadValidator(crds.GIE, crds.KEDA)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Error("LoadValidator of the same sets made a second Validator")
	}
	other, err := crds.LoadValidator(crds.GIE)
	if err != nil {
		t.Fatal(err)
	}
	if other == first {
		t.Error("LoadValidator of other sets returned the same Validator")
	}
	if _, err := crds.LoadValidator("no-such-set"); err == nil {
		t.Error("LoadValidator of an unknown set: no error")
	}
}
