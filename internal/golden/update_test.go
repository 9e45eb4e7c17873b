package golden_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// The helper test's inputs, set by TestUpdate for the child process.
const (
	helperFile = "GOLDEN_HELPER_FILE"
	helperGot  = "GOLDEN_HELPER_GOT"
)

// TestAssertHelper is the child process of TestUpdate: it asserts one
// golden file and does nothing unless TestUpdate started it.
func TestAssertHelper(t *testing.T) {
	file := os.Getenv(helperFile)
	if file == "" {
		t.Skip("run by TestUpdate only")
	}
	golden.Assert(t, file, []byte(os.Getenv(helperGot)))
}

// TestUpdate runs Assert in a child test process, as `go test -update`
// does, and checks what -update does to the golden file and to the run:
// refused under CI, a rewrite fails the run naming the file, an unchanged
// file passes, and output holding the test binary's name fails either way.
func TestUpdate(t *testing.T) {
	self := filepath.Base(os.Args[0])
	cases := []struct {
		name       string
		flags, env []string
		file, got  string
		wantFail   bool
		wantOut    string
		wantFile   string
	}{
		{"refused when CI is set", []string{"-update"}, []string{"CI=true"}, "old\n", "new\n", true,
			"-update is refused while CI is set", "old\n"},
		{"a rewrite fails the run, naming the file", []string{"-update"}, nil, "old\n", "new\n", true,
			"rewrote ", "new\n"},
		{"a golden file -update leaves unchanged passes", []string{"-update"}, nil, "same\n", "same\n", false,
			"", "same\n"},
		{"the binary's name is refused with -update", []string{"-update"}, nil, "old\n", "manager " + self + "\n", true,
			"holds this test binary's name", "manager " + self + "\n"},
		{"the binary's name is refused without -update", nil, nil, "manager " + self + "\n", "manager " + self + "\n", true,
			"holds this test binary's name", "manager " + self + "\n"},
		{"a golden file that matches passes", nil, nil, "same\n", "same\n", false, "", "same\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "testdata", "out.txt")
			if err := os.MkdirAll(filepath.Dir(file), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"-test.run=^TestAssertHelper$", "-test.v"}, c.flags...)
			cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
			env := []string{}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, golden.CIEnv+"=") {
					env = append(env, kv)
				}
			}
			cmd.Env = append(append(env, helperFile+"="+file, helperGot+"="+c.got), c.env...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if failed := err != nil; failed != c.wantFail {
				t.Errorf("the run failed: %v, want %v; its output:\n%s", failed, c.wantFail, out.String())
			}
			if c.wantOut != "" && !strings.Contains(out.String(), c.wantOut) {
				t.Errorf("the output lacks %q:\n%s", c.wantOut, out.String())
			}
			if c.wantOut == "rewrote " && !strings.Contains(out.String(), "rewrote "+file) {
				t.Errorf("the output does not name the rewritten file %s:\n%s", file, out.String())
			}
			if got, err := os.ReadFile(file); err != nil || string(got) != c.wantFile {
				t.Errorf("the golden file holds %q (%v), want %q", got, err, c.wantFile)
			}
		})
	}
}
