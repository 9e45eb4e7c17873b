package golden_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryTestPackageKnowsUpdate keeps `go test ./... -update` working: a
// test binary that does not import this package rejects the flag and fails
// the whole run. test/testenv imports it for the packages that use testenv.
func TestEveryTestPackageKnowsUpdate(t *testing.T) {
	root := filepath.Join("..", "..")
	withTests := map[string]bool{}
	importsGolden := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "hack" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		if dir == "." || filepath.Base(dir) == "golden" {
			return nil
		}
		withTests[dir] = true
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), `"github.com/opendatahub-io/odh-serving/internal/golden"`) ||
			strings.Contains(string(data), `"github.com/opendatahub-io/odh-serving/test/testenv"`) {
			importsGolden[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(withTests) < 5 {
		t.Fatalf("found only %d test packages; is the walk rooted right?", len(withTests))
	}
	for dir := range withTests {
		if !importsGolden[dir] {
			t.Errorf("%s has tests but none imports internal/golden; `go test ./... -update` would fail there", dir)
		}
	}
}
