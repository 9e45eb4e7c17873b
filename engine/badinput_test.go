package engine_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/presets"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
)

// TestBadInput runs each testdata/bad/*.yaml through decoding, preset lookup
// and rendering, as `odh-serving render` does, and checks that it fails
// with the message on the file's first line ("# error: ...").
func TestBadInput(t *testing.T) {
	files := golden.Glob(t, "testdata/bad/*.yaml")
	if len(files) < 30 {
		t.Fatalf("the bad-input corpus has %d cases; keep at least 30", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			want, data := golden.WantError(t, file)
			err := renderAll(t, file, data)
			if err == nil {
				t.Fatalf("rendered without error; want %q", want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, want)
			}
		})
	}
}

// renderAll decodes a stream and renders every service in it, panicking
// nowhere: a panic fails the test as a crash.
func renderAll(t *testing.T, file string, data []byte) error {
	t.Helper()
	in, err := manifest.Decode(file, data)
	if err != nil {
		return err
	}
	catalog, err := presets.Default(in.Presets)
	if err != nil {
		return err
	}
	images := presetstest.Images(t)
	var errs []error
	for _, s := range in.Services {
		if _, err := engine.Render(t.Context(), s.Service, catalog, engine.Options{Images: images}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
