package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/ with the current output")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// CIEnv is the variable CI sets (GitHub Actions and most others): with it
// set, -update is refused, as a CI run must compare, never rewrite.
const CIEnv = "CI"

// Assert compares got with the file at path, or rewrites the file with
// -update. Line endings are normalised.
//
// With -update, a file whose content changes is rewritten and the test
// fails naming it: go test shows a passing test's output only with -v, so a
// run that rewrote goldens is never green, and each rewritten file is
// listed to be reviewed in the diff. Run the tests again without -update to
// see them pass. -update is refused when CI is set.
//
// Either way got must not hold the test binary's name (client-go's default
// field manager and user agent): it depends on how the binary was built
// (go test's pkg.test, a renamed -o), so a golden holding it passes on one
// machine and fails on another.
func Assert(t *testing.T, path string, got []byte) {
	t.Helper()
	if name := machineSpecific(got); name != "" {
		t.Errorf("%s: the output holds this test binary's name %q (client-go's default field manager); give the writer a field manager of its own (client.FieldOwner) so the golden does not depend on how the binary was built", path, name)
	}
	if *update {
		if os.Getenv(CIEnv) != "" {
			t.Fatalf("%s: -update is refused while %s is set: CI compares golden files, it never rewrites them", path, CIEnv)
		}
		rewrote, err := rewrite(path, got)
		if err != nil {
			t.Fatal(err)
		}
		if rewrote {
			t.Errorf("rewrote %s (-update): review the diff, then run the tests without -update", path)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run `go test -update` to create it): %v", err)
	}
	if diff := cmp.Diff(normalise(want), normalise(got)); diff != "" {
		t.Errorf("%s differs (-want +got); if the change is intended, run `go test -update` and review the diff:\n%s", path, diff)
	}
}

func normalise(b []byte) string { return strings.ReplaceAll(string(b), "\r\n", "\n") }

// rewrite writes got to path unless the file holds it already (line endings
// aside), and reports whether it wrote.
func rewrite(path string, got []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && normalise(old) == normalise(got) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return false, fmt.Errorf("rewrite golden file %s: %w", path, err)
	}
	if err := os.WriteFile(path, got, 0o644); err != nil { //nolint:gosec // golden files are committed and read by everyone: 0644 as git checks them out
		return false, fmt.Errorf("rewrite golden file %s: %w", path, err)
	}
	return true, nil
}

// machineSpecific returns the running test binary's name when out holds it,
// or "". Only a name go test gives (ending in .test) counts.
func machineSpecific(out []byte) string {
	name := filepath.Base(os.Args[0])
	if !strings.HasSuffix(name, ".test") || !bytes.Contains(out, []byte(name)) {
		return ""
	}
	return name
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
