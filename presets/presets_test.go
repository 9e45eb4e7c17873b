package presets_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
)

// TestEveryPresetFolder walks every preset folder: it must have a README,
// a preset and a sample service; the sample must render through the preset,
// and the output must match expected.yaml.
func TestEveryPresetFolder(t *testing.T) {
	dirs := golden.Glob(t, "*/preset.yaml")
	catalog, images := presetstest.Catalog(t, nil), presetstest.Images(t)
	for _, p := range dirs {
		dir := filepath.Dir(p)
		t.Run(dir, func(t *testing.T) {
			for _, f := range []string{"README.md", "sample.yaml"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Fatalf("every preset folder needs a %s: %v", f, err)
				}
			}
			in, err := manifest.DecodeFile(filepath.Join(dir, "sample.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Services) != 1 {
				t.Fatalf("sample.yaml must hold one LLMInferenceService, has %d", len(in.Services))
			}
			res, err := engine.Render(t.Context(), in.Services[0].Service, catalog, engine.Options{Images: images})
			if err != nil {
				t.Fatal(err)
			}
			id := engine.DefaultSystemNamespace + "/" + preset.DefaultPrefix + dir
			if !slices.ContainsFunc(res.Explanation.Layers, func(l engine.Layer) bool { return strings.HasPrefix(l.Name, id+" ") }) {
				t.Errorf("the sample does not render through %s; its layers: %v", id, res.Explanation.Layers)
			}
			out, err := res.YAML()
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join(dir, "expected.yaml"), out)
		})
	}
}

// TestImagesAreAllUsed keeps images.yaml free of keys no preset names (the
// engine names the storage initializer's).
func TestImagesAreAllUsed(t *testing.T) {
	images := presetstest.Images(t)
	files, _ := filepath.Glob("*/preset.yaml")
	var all strings.Builder
	for _, f := range files {
		data := golden.Read(t, f)
		all.Write(data)
	}
	for key := range images {
		if key == engine.StorageInitializerImageKey {
			continue
		}
		if !strings.Contains(all.String(), ".GlobalConfig.Images."+key+" ") {
			t.Errorf("images.yaml key %q is used by no preset", key)
		}
	}
}
