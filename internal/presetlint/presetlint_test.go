package presetlint_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/internal/presetlint"
	"github.com/opendatahub-io/odh-serving/presets"
)

// newLinter lints with the shipped presets under their file names (no
// prefix), so the shipped files themselves are the well-known presets.
func newLinter(t *testing.T) *presetlint.Linter {
	t.Helper()
	builtin, err := presets.Load(engine.DefaultSystemNamespace, "")
	if err != nil {
		t.Fatal(err)
	}
	empty := ""
	l, err := presetlint.New(builtin, engine.Options{PresetPrefix: &empty})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestShippedPresetsPass(t *testing.T) {
	l := newLinter(t)
	files := golden.Glob(t, "../../presets/*/preset.yaml")
	for _, f := range files {
		if problems, _ := l.LintFile(t.Context(), f); len(problems) > 0 {
			t.Errorf("%s:\n  %s", f, strings.Join(problems, "\n  "))
		}
	}
}

// TestBrokenPresetsFail lints each testdata/broken/*.yaml and expects the
// message on its first line ("# error: ...").
func TestBrokenPresetsFail(t *testing.T) {
	l := newLinter(t)
	files, err := filepath.Glob("testdata/broken/*.yaml")
	if err != nil || len(files) < 15 {
		t.Fatalf("keep at least 15 broken presets, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			want, _ := golden.WantError(t, f)
			problems, _ := l.LintFile(t.Context(), f)
			if len(problems) == 0 {
				t.Fatalf("lint passed; want %q", want)
			}
			all := strings.Join(problems, "\n")
			if !strings.Contains(all, want) {
				t.Errorf("problems:\n%s\nwant one containing:\n%s", all, want)
			}
			if !strings.HasPrefix(problems[0], f+":") {
				t.Errorf("problem %q must start with the file and line", problems[0])
			}
		})
	}
}
