//go:build race

package imagebuild

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The two platforms' builds share o.Log, which a caller may pass as a
// bytes.Buffer: under -race (this file builds only then), any write to it
// from both builds at once fails the test.
func TestCompileAllSharesTheLogSafely(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	o := Options{
		ModuleDir: root, Package: "./internal/imagebuild/testdata/hello", OutDir: t.TempDir(),
		Platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}},
		LDFlags:   "-s -w", Log: &log,
	}
	if _, err := compileAll(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	for _, p := range o.Platforms {
		if want := "built ./internal/imagebuild/testdata/hello for " + p.String() + " in "; !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
}
