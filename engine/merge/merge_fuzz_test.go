package merge_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/internal/corpus"
	"github.com/opendatahub-io/odh-serving/engine/merge"
	"github.com/opendatahub-io/odh-serving/presets"
)

// Layer names the fuzz target uses; an error must name the one that failed.
const (
	fuzzBaseRef = "team/fuzz-baseref"
	fuzzService = "service"
)

// FuzzMerge merges two random override specs (given as JSON, the way a
// baseRef and a service reach the merge) over the shipped single-node,
// scheduler and route presets. Seeds are the specs of every golden case and
// every shipped preset. Properties:
//   - no panic;
//   - the merge is deterministic: twice the same layers, the same JSON;
//   - an error names the layer that failed;
//   - the provenance names only real layers, and every field the service
//     sets is won by the service.
//
// Run it longer with: go test ./engine/merge -run '^$' -fuzz '^FuzzMerge$' -fuzztime 2m
func FuzzMerge(f *testing.F) {
	base := seedLayers(f)
	for _, spec := range seedSpecs(f) {
		f.Add(spec, []byte(`{}`))
		f.Add([]byte(`{}`), spec)
	}
	f.Add([]byte(`{"template":{"containers":[{"name":"main","env":[{"name":"A","value":"1"}],"ports":[{"containerPort":8000}]}]}}`),
		[]byte(`{"template":{"containers":[{"name":"main","env":[{"name":"A"}],"ports":[{"containerPort":8000,"name":"x"}]}],"volumes":[{"name":"v"}]}}`))
	f.Add([]byte(`{"template":{"containers":[{"name":"main","$patch":"delete"}]}}`), []byte(`{"replicas":0}`))
	f.Fuzz(func(t *testing.T, baseRefJSON, serviceJSON []byte) {
		baseRef, ok := decodeSpec(baseRefJSON)
		if !ok {
			return
		}
		service, ok := decodeSpec(serviceJSON)
		if !ok {
			return
		}
		layers := append(append([]merge.Layer{}, base...),
			merge.Layer{Name: fuzzBaseRef, Spec: baseRef}, merge.Layer{Name: fuzzService, Spec: service})
		first, prov, err := merge.Specs(layers)
		if err != nil {
			if !namesALayer(err.Error(), layers) {
				t.Fatalf("the error names no layer: %v", err)
			}
			return
		}
		second, _, err := merge.Specs(layers)
		if err != nil {
			t.Fatalf("the second merge of the same layers failed: %v", err)
		}
		a, b := mustMarshal(t, first), mustMarshal(t, second)
		if !bytes.Equal(a, b) {
			t.Fatalf("two merges of the same layers differ:\n%s\n%s", a, b)
		}
		for field, winner := range prov.Winner {
			if !isLayer(winner, layers) {
				t.Fatalf("provenance: %s won by %q, which is not a layer", field, winner)
			}
		}
		for _, field := range prov.Set[len(prov.Set)-1].Fields {
			if got := prov.Winner[field]; got != fuzzService {
				t.Fatalf("provenance: the service sets %s but %q wins it", field, got)
			}
		}
	})
}

// seedLayers are the shipped presets a single-node service with a managed
// router starts from.
func seedLayers(f *testing.F) []merge.Layer {
	f.Helper()
	all, err := presets.Load("opendatahub", "kserve-")
	if err != nil {
		f.Fatal(err)
	}
	var layers []merge.Layer
	for _, want := range []string{"kserve-config-llm-scheduler", "kserve-config-llm-router-route", "kserve-config-llm-template"} {
		for _, p := range all {
			if p.Name == want {
				l, err := p.Layer()
				if err != nil {
					f.Fatal(err)
				}
				layers = append(layers, l)
			}
		}
	}
	if len(layers) != 3 {
		f.Fatalf("found %d of the 3 seed presets", len(layers))
	}
	return layers
}

// seedSpecs returns, as JSON, the spec of every service and preset in the
// golden cases and of every shipped preset.
func seedSpecs(f *testing.F) [][]byte {
	f.Helper()
	specs, err := corpus.Specs("../..")
	if err != nil {
		f.Fatal(err)
	}
	out := make([][]byte, 0, len(specs))
	for _, spec := range specs {
		data, err := json.Marshal(spec)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	if len(out) < 20 {
		f.Fatalf("only %d seed specs", len(out))
	}
	return out
}

// decodeSpec decodes a spec as the API server stores one; input that is
// not a spec is not interesting here (the decoders have their own fuzz
// target).
func decodeSpec(data []byte) (*v1alpha2.LLMInferenceServiceSpec, bool) {
	spec := &v1alpha2.LLMInferenceServiceSpec{}
	if err := json.Unmarshal(data, spec); err != nil {
		return nil, false
	}
	return spec, true
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode the merged spec: %v", err)
	}
	return data
}

func isLayer(name string, layers []merge.Layer) bool {
	for _, l := range layers {
		if l.Name == name {
			return true
		}
	}
	return false
}

func namesALayer(msg string, layers []merge.Layer) bool {
	for _, l := range layers {
		if strings.Contains(msg, l.Name) {
			return true
		}
	}
	return false
}
