package engine_test

import (
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine"
)

// TestWarnings renders golden inputs and checks the warnings the result
// carries: the prefill/decode presets' own --kv-transfer-config (NIXL) keeps
// kvCacheOffloading from vLLM in both workloads, which must be said; a
// service using only what odh-serving acts on gets none.
func TestWarnings(t *testing.T) {
	for dir, want := range map[string][]string{
		"kserve-pd-speculator-kvcache": {"spec.kvCacheOffloading is not passed to vLLM", "spec.prefill.kvCacheOffloading is not passed to vLLM"},
		"kserve-kvcache-lws":           nil,
		"kserve-tracing":               nil,
		"single-node":                  nil,
	} {
		t.Run(dir, func(t *testing.T) {
			svc, catalog, opts := loadCase(t, dir)
			res, err := engine.Render(t.Context(), svc, catalog, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != len(want) {
				t.Fatalf("warnings %q, want %d of them", res.Warnings, len(want))
			}
			for i, w := range want {
				if !strings.HasPrefix(res.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to start with %q", i, res.Warnings[i], w)
				}
			}
		})
	}
}
