package cli_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMEListsEveryCommand reads the README's layout row for the
// odh-serving command and checks it names every command `odh-serving
// --help` lists, and no other.
func TestREADMEListsEveryCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `cmd/odh-serving`.*\\| the `odh-serving` command: (.*) \\|$").FindSubmatch(readme)
	if row == nil {
		t.Fatal("README.md has no layout row for cmd/odh-serving")
	}
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z-]+)[^`]*`").FindAllStringSubmatch(string(row[1]), -1) {
		listed = append(listed, m[1])
	}
	code, stdout, stderr := run(t, "", "--help")
	if code != 0 {
		t.Fatalf("odh-serving --help: exit %d: %s", code, stderr)
	}
	_, commands, _ := strings.Cut(stdout, "Available Commands:\n")
	commands, _, _ = strings.Cut(commands, "\n\n")
	var want []string
	for _, line := range strings.Split(commands, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] != "help" && f[0] != "completion" {
			want = append(want, f[0])
		}
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("README.md's layout lists the commands %v; odh-serving has %v", listed, want)
	}
}
