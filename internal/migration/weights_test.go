package migration

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

func TestSetPoolWeights(t *testing.T) {
	cases := []struct {
		name, why string
		phase     convention.Phase
		rules     string
		want      string // the rules afterwards; empty: unchanged
		err       error
	}{
		{name: "dual to v1", why: "a pair flips", phase: convention.PhaseV1,
			rules: `[{backendRefs: [{group: inference.networking.x-k8s.io, kind: InferencePool, name: p, weight: 100}, {group: inference.networking.k8s.io, kind: InferencePool, name: p, weight: 0}]}]`,
			want:  `[{backendRefs: [{group: inference.networking.x-k8s.io, kind: InferencePool, name: p, weight: 0}, {group: inference.networking.k8s.io, kind: InferencePool, name: p, weight: 100}]}]`},
		{name: "v1 already", why: "nothing to change", phase: convention.PhaseRetired,
			rules: `[{backendRefs: [{group: inference.networking.x-k8s.io, kind: InferencePool, name: p, weight: 0}, {group: inference.networking.k8s.io, kind: InferencePool, name: p, weight: 100}]}]`},
		{name: "dual with missing weights", why: "a missing weight is 1, so it is set", phase: convention.PhaseDual,
			rules: `[{backendRefs: [{group: inference.networking.x-k8s.io, kind: InferencePool, name: p}, {group: inference.networking.k8s.io, kind: InferencePool, name: p}]}]`,
			want:  `[{backendRefs: [{group: inference.networking.x-k8s.io, kind: InferencePool, name: p, weight: 100}, {group: inference.networking.k8s.io, kind: InferencePool, name: p, weight: 0}]}]`},
		{name: "lone v1 backend", why: "a single backend keeps its weight (0 would drop all traffic)", phase: convention.PhaseV1,
			rules: `[{backendRefs: [{group: inference.networking.k8s.io, kind: InferencePool, name: p, weight: 1}]}]`},
		{name: "other backends", why: "Services and other pools' groups are not ours", phase: convention.PhaseV1,
			rules: `[{backendRefs: [{kind: Service, name: s, port: 8000, weight: 5}, {group: example.com, kind: InferencePool, name: p, weight: 7}]}, {matches: [{path: {type: PathPrefix, value: /}}]}]`},
		{name: "lone v1alpha2 backend, moving to v1", why: "weights alone cannot move it", phase: convention.PhaseV1,
			rules: `[{backendRefs: [{group: inference.networking.x-k8s.io, kind: InferencePool, name: p, weight: 1}]}]`, err: ErrNoV1Backend},
		{name: "lone v1alpha2 backend, dual", why: "nothing to move yet", phase: convention.PhaseDual,
			rules: `[{backendRefs: [{group: inference.networking.x-k8s.io, kind: InferencePool, name: p, weight: 1}]}]`},
		{name: "two rules, two pools", why: "pairs are by name within a rule", phase: convention.PhaseV1,
			rules: `[{backendRefs: [{group: inference.networking.x-k8s.io, kind: InferencePool, name: a, weight: 100}, {group: inference.networking.k8s.io, kind: InferencePool, name: a, weight: 0}]}, {backendRefs: [{group: inference.networking.k8s.io, kind: InferencePool, name: b, weight: 0}, {group: inference.networking.x-k8s.io, kind: InferencePool, name: b, weight: 100}]}]`,
			want:  `[{backendRefs: [{group: inference.networking.x-k8s.io, kind: InferencePool, name: a, weight: 0}, {group: inference.networking.k8s.io, kind: InferencePool, name: a, weight: 100}]}, {backendRefs: [{group: inference.networking.k8s.io, kind: InferencePool, name: b, weight: 100}, {group: inference.networking.x-k8s.io, kind: InferencePool, name: b, weight: 0}]}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			route := map[string]any{"spec": map[string]any{"rules": decode(t, tc.rules)}}
			changed, err := setPoolWeights(route, tc.phase)
			if !errors.Is(err, tc.err) {
				t.Fatalf("%s: error %v, want %v", tc.why, err, tc.err)
			}
			want := tc.want
			if want == "" {
				want = tc.rules
			}
			if changed != (tc.want != "") {
				t.Errorf("%s: changed = %v", tc.why, changed)
			}
			if diff := cmp.Diff(decode(t, want), route["spec"].(map[string]any)["rules"]); diff != "" && err == nil {
				t.Errorf("%s: rules (-want +got):\n%s", tc.why, diff)
			}
		})
	}
}

// decode reads YAML rules with integers as int64, as the API client does.
func decode(t *testing.T, s string) []any {
	t.Helper()
	var v []any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return intsToInt64(v).([]any)
}

func intsToInt64(v any) any {
	switch x := v.(type) {
	case []any:
		for i := range x {
			x[i] = intsToInt64(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = intsToInt64(x[k])
		}
	case float64:
		return int64(x)
	}
	return v
}
