package golden_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/internal/golden"
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

func TestWantError(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	content := "# error: spec.replicas: must be 1\nspec: {replicas: 2}\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	want, data := golden.WantError(t, file)
	if want != "spec.replicas: must be 1" || string(data) != content {
		t.Errorf("WantError = %q, %q", want, data)
	}
}

func TestErrorCase(t *testing.T) {
	if golden.ErrorCase(t, nil, "") {
		t.Error("a case that wants no error stopped")
	}
	if !golden.ErrorCase(t, errors.New("spec.replicas: must be 1"), "must be 1") {
		t.Error("a case that wants an error went on")
	}
}

func TestLeaves(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	got := golden.Leaves(errors.Join(a, errors.Join(b, c)))
	if !slices.Equal(got, []error{a, b, c}) {
		t.Errorf("Leaves = %v, want [a b c]", got)
	}
	if got := golden.Leaves(a); !slices.Equal(got, []error{a}) {
		t.Errorf("Leaves(a) = %v, want [a]", got)
	}
}
