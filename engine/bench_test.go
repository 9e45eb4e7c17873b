package engine_test

import (
	"io"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
)

// BenchmarkRender renders one service per topology with the shipped
// presets, decoding and preset loading done beforehand. Run: make bench.
func BenchmarkRender(b *testing.B) {
	for _, topology := range []string{"single-node", "prefill-decode", "dp-ep", "pd-dp", "pipeline-parallel"} {
		b.Run(topology, func(b *testing.B) {
			svc, catalog, opts := loadCase(b, topology)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := engine.Render(b.Context(), svc, catalog, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenderToYAML adds what the CLI and the post-renderer do after a
// render: convert to maps and write YAML.
func BenchmarkRenderToYAML(b *testing.B) {
	svc, catalog, opts := loadCase(b, "prefill-decode")
	b.ReportAllocs()
	for b.Loop() {
		res, err := engine.Render(b.Context(), svc, catalog, opts)
		if err != nil {
			b.Fatal(err)
		}
		objs, err := res.Unstructured()
		if err != nil {
			b.Fatal(err)
		}
		if err := manifest.WriteYAML(io.Discard, objs); err != nil {
			b.Fatal(err)
		}
	}
}
