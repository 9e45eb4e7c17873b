package badinput

import (
	"bytes"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/internal/cli"
)

// runCLI runs the odh-serving command line in-process.
func runCLI(args []string, stdin []byte) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = cli.Main(args, cli.Streams{In: bytes.NewReader(stdin), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// eachCase runs check as a subtest for every case entry must reject.
func eachCase(t *testing.T, entry string, check func(t *testing.T, c *badCase, want string)) {
	t.Helper()
	for _, c := range loadCases(t) {
		if want, ok := c.wants(entry); ok {
			t.Run(c.name, func(t *testing.T) { check(t, c, want) })
		}
	}
}

// TestRender runs every case `render` can see through `odh-serving render`:
// exit code 1, nothing on stdout, the message on stderr.
func TestRender(t *testing.T) {
	eachCase(t, entryRender, func(t *testing.T, c *badCase, want string) {
		t.Helper()
		code, stdout, stderr := runCLI([]string{"render", "-f", c.file}, nil)
		checkFailed(t, code, stdout, stderr, want)
	})
}

// TestPostRender runs every case `post-render` can see through
// `odh-serving post-render --mode static`, the stream on stdin.
func TestPostRender(t *testing.T) {
	eachCase(t, entryPostRender, func(t *testing.T, c *badCase, want string) {
		t.Helper()
		code, stdout, stderr := runCLI([]string{"post-render", "--mode", "static"}, c.data)
		checkFailed(t, code, stdout, stderr, want)
	})
}

// TestPresetsLint runs every preset case through `odh-serving presets lint`,
// which prints its problems on stdout and exits 1.
func TestPresetsLint(t *testing.T) {
	eachCase(t, entryLint, func(t *testing.T, c *badCase, want string) {
		t.Helper()
		code, stdout, stderr := runCLI([]string{"presets", "lint", c.file}, nil)
		if code != 1 {
			t.Fatalf("exit code %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if all := stdout + stderr; !strings.Contains(all, want) {
			t.Errorf("output:\n%s\nwant it to contain:\n%s", all, want)
		}
		if !strings.HasPrefix(stdout, c.file+":") {
			t.Errorf("the first problem must start with the file and line:\n%s", stdout)
		}
	})
}

func checkFailed(t *testing.T, code int, stdout, stderr, want string) {
	t.Helper()
	if code != 1 {
		t.Fatalf("exit code %d, want 1\nstderr:\n%s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("a failed run wrote to stdout:\n%s", stdout)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr:\n%s\nwant it to contain:\n%s", stderr, want)
	}
}
