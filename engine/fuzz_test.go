package engine_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/presets"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
)

// FuzzRender feeds arbitrary streams (seeded with every golden and bad
// input) through decoding, preset lookup and rendering. It must never
// panic, and what renders must render to the same bytes twice.
//
// Run it longer with: go test ./engine -run '^$' -fuzz FuzzRender -fuzztime 2m
func FuzzRender(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/input.yaml")
	bad, _ := filepath.Glob("testdata/bad/*.yaml")
	for _, s := range append(seeds, bad...) {
		data := golden.Read(f, s)
		f.Add(data)
	}
	images := presetstest.Images(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := manifest.Decode("fuzz.yaml", data)
		if err != nil {
			return
		}
		catalog, err := presets.Default(in.Presets)
		if err != nil {
			return
		}
		for _, s := range in.Services {
			first := renderBytes(t, s, catalog, images)
			if second := renderBytes(t, s, catalog, images); !bytes.Equal(first, second) {
				t.Fatalf("two renders differ for:\n%s", data)
			}
		}
	})
}

func renderBytes(t *testing.T, s *manifest.Service, catalog *preset.Catalog, images map[string]string) []byte {
	t.Helper()
	res, err := engine.Render(t.Context(), s.Service.DeepCopy(), catalog, engine.Options{Images: images})
	if err != nil {
		return []byte(err.Error())
	}
	out, err := res.YAML()
	if err != nil {
		return []byte(err.Error())
	}
	return out
}
