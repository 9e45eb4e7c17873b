package golden

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/ with the current output")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Assert compares got with the file at path, or rewrites the file with
// -update. Line endings are normalised.
func Assert(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil { //nolint:gosec // golden files are meant to be read
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run `go test -update` to create it): %v", err)
	}
	norm := func(b []byte) string { return strings.ReplaceAll(string(b), "\r\n", "\n") }
	if diff := cmp.Diff(norm(want), norm(got)); diff != "" {
		t.Errorf("%s differs (-want +got); if the change is intended, run `go test -update` and review the diff:\n%s", path, diff)
	}
}

// JSON is v as indented JSON, one field a line, so that cmp.Diff of two
// shows which fields differ.
func JSON(tb testing.TB, v any) string {
	tb.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		tb.Fatalf("encode %T as JSON: %v", v, err)
	}
	return string(data)
}

// Glob returns the files that match pattern (filepath.Glob), and fails the
// test when the pattern is malformed or matches none: a test over a corpus
// of cases must not pass with no cases.
func Glob(tb testing.TB, pattern string) []string {
	tb.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		tb.Fatalf("glob %s: %v", pattern, err)
	}
	if len(files) == 0 {
		tb.Fatalf("no files match %s", pattern)
	}
	return files
}

// Read returns the content of the file at path, and fails the test when it
// cannot be read.
func Read(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	return data
}
