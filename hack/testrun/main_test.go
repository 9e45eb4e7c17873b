package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestPlaceBinaries(t *testing.T) {
	var pkgs []*pkg
	for _, path := range []string{"m/test/controller", "m/z/x", "m/engine", "m/internal/controller", "m/x/v2", "m/y/x", "m/notests"} {
		p := &pkg{ImportPath: path, TestGoFiles: []string{"a_test.go"}}
		if path == "m/notests" {
			p.TestGoFiles = nil
		}
		pkgs = append(pkgs, p)
	}
	placeBinaries(pkgs)
	want := map[string]string{
		"m/internal/controller": "0/controller.test", // by import path: internal before test
		"m/test/controller":     "1/controller.test",
		"m/engine":              "0/engine.test",
		"m/x/v2":                "0/x.test", // go test -c names it after x, not v2
		"m/y/x":                 "1/x.test",
		"m/z/x":                 "2/x.test",
		"m/notests":             "",
	}
	for _, p := range pkgs {
		if p.bin != want[p.ImportPath] {
			t.Errorf("%s: binary %q, want %q", p.ImportPath, p.bin, want[p.ImportPath])
		}
	}
}

func TestParseArgs(t *testing.T) {
	cfg, err := parseArgs([]string{"-p", "3", "-o", "/tmp/bins", "-build", "-ldflags=-w -tags=x", "./test/a", "./...", "-test.run=^TestX$", "-test.v"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.jobs != 3 || cfg.binDir != "/tmp/bins" ||
		!slices.Equal(cfg.buildFlags, []string{"-ldflags=-w", "-tags=x"}) ||
		!slices.Equal(cfg.patterns, []string{"./test/a", "./..."}) ||
		!slices.Equal(cfg.testFlags, []string{"-test.run=^TestX$", "-test.v"}) {
		t.Errorf("parseArgs: %+v", cfg)
	}
	for _, args := range [][]string{{"./...", "-run=X"}, {"-test.v"}, {"-p", "0", "./..."}} {
		if _, err := parseArgs(args); err == nil {
			t.Errorf("parseArgs(%q): no error", args)
		}
	}
}

func TestKillAfter(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{defaultTestFlags, 11 * time.Minute},
		{append(slices.Clone(defaultTestFlags), "-test.timeout=30s"), 90 * time.Second},
		{append(slices.Clone(defaultTestFlags), "-test.timeout=0"), 0},
	} {
		if got := killAfter(tc.args); got != tc.want {
			t.Errorf("killAfter(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestRun runs the runner three times on a copy of testdata/fakemod: a/x and
// b/x (both x.test), fail (a failing test) and notests.
func TestRun(t *testing.T) {
	mod := t.TempDir()
	if err := os.CopyFS(mod, os.DirFS(filepath.Join("testdata", "fakemod"))); err != nil {
		t.Fatal(err)
	}
	binDir := filepath.Join(t.TempDir(), "bin")
	gone, keep := filepath.Join(binDir, "0", "gone.test"), filepath.Join(binDir, "0", "keep.txt")
	for _, f := range []string{gone, keep} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config{moduleDir: mod, binDir: binDir, jobs: 1}
	const m = "example.com/fakemod/"

	// The packages named first start first; one at a time here, so they end
	// in that order too. The failing package's output comes before its FAIL.
	cfg.patterns = []string{"./b/x", "./..."}
	out, err := runOnce(t, cfg)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 test packages failed:\n\t"+m+"fail") {
		t.Errorf("error %v, want one naming %sfail", err, m)
	}
	if got, want := results(out), []string{"ok  \t" + m + "b/x", "ok  \t" + m + "a/x", "FAIL\t" + m + "fail"}; !slices.Equal(got, want) {
		t.Errorf("results %q, want %q\n%s", got, want, out)
	}
	if !regexp.MustCompile(`(?m)^    fail_test.go:5: fails on purpose\n(.*\n)*FAIL\t` + m + `fail\t\d+\.\d{3}s$`).MatchString(out) {
		t.Errorf("no failure output before the FAIL line:\n%s", out)
	}
	for _, want := range []string{"?   \t" + m + "notests\t[no test files]\n", ": 3 linked, 0 up to date"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the output:\n%s", want, out)
		}
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the binary of a package that does not exist is still there: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a file that is not a test binary was removed: %v", err)
	}
	bins := map[string]os.FileInfo{}
	for _, b := range []string{"0/x.test", "1/x.test", "0/fail.test"} {
		if bins[b], err = os.Stat(filepath.Join(binDir, b)); err != nil {
			t.Fatal(err)
		}
	}

	// Nothing changed: nothing is linked again. Three at a time, with -test.v,
	// each package's output stays in one piece, followed by its ok line.
	cfg.jobs, cfg.patterns, cfg.testFlags = 3, []string{"./..."}, []string{"-test.run=TestPass", "-test.v"}
	if out, err = runOnce(t, cfg); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for b, before := range bins {
		if after, err := os.Stat(filepath.Join(binDir, b)); err != nil || !os.SameFile(before, after) {
			t.Errorf("%s was linked again (%v)", b, err)
		}
	}
	if !strings.Contains(out, ": 0 linked, 3 up to date") || !strings.Contains(out, "ok  \t"+m+"fail\t") || !strings.Contains(out, "s [no tests to run]\n") {
		t.Errorf("want no links, and fail's ok line saying it ran no test:\n%s", out)
	}
	for _, pkg := range []string{"a/x", "b/x"} {
		if !regexp.MustCompile(`(?m)^    x_test.go:\d+: package ` + pkg + `\n--- PASS: TestPass .*\nPASS\nok  \t` + m + pkg + `\t`).MatchString(out) {
			t.Errorf("%s's output is not in one piece before its ok line:\n%s", pkg, out)
		}
	}

	// a/x no longer compiles and fail no longer passes go test's vet checks:
	// both fail, named; their old binaries do not run, and b/x's still does.
	for file, src := range map[string]string{
		"a/x/broken_test.go": "package x\n\nvar _ int = \"\"\n",
		"fail/vet_test.go":   "package fail\n\nimport \"fmt\"\n\nvar _ = fmt.Sprintf(\"%d\", \"s\")\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, file), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg.testFlags = []string{"-test.run=TestPass"}
	out, err = runOnce(t, cfg)
	if err == nil || !strings.Contains(err.Error(), "2 of 3 test packages failed:") || !strings.Contains(err.Error(), "\t"+m+"a/x [build failed]") {
		t.Errorf("error %v, want one naming %sa/x [build failed]", err, m)
	}
	if got, want := results(out), []string{"FAIL\t" + m + "a/x [build failed]", "FAIL\t" + m + "fail [build failed]", "ok  \t" + m + "b/x"}; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("results %q, want %q\n%s", got, want, out)
	}
	for _, want := range []string{"broken_test.go:3:13: cannot use", `vet_test.go:5:22: fmt.Sprintf format %d has arg "s" of wrong type string`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the output:\n%s", want, out)
		}
	}
}

func runOnce(t *testing.T, cfg config) (string, error) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	err := run(ctx, cfg, &out)
	return out.String(), err
}

// results are the output's ok and FAIL lines, without their times.
func results(out string) []string {
	return regexp.MustCompile(`(?m)^(ok  |FAIL)\t[^\t\n]+`).FindAllString(out, -1)
}
