package crds_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestREADMECRDSizes reads the README's table of our CRDs' sizes and checks
// each number against the file `make generate` writes, so that the table
// stays true as the API grows; and that every one of our CRDs is in it.
func TestREADMECRDSizes(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\s*\\| `([a-z.]+\\.serving\\.kserve\\.io)` \\| ([0-9,]+) bytes \\|$")
	rows := row.FindAllStringSubmatch(string(readme), -1)
	files, err := filepath.Glob("serving.kserve.io_*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(files) {
		t.Errorf("README.md's CRD size table has %d rows, want one for each of %v", len(rows), files)
	}
	for _, r := range rows {
		name, stated := r[1], r[2]
		plural, _, _ := strings.Cut(name, ".")
		file := "serving.kserve.io_" + plural + ".yaml"
		info, err := os.Stat(file)
		if err != nil {
			t.Errorf("README.md states the size of %s: %v", name, err)
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(stated, ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		if int64(n) != info.Size() {
			t.Errorf("README.md says %s is %s bytes; %s is %s", name, stated, file, thousands(info.Size()))
		}
	}
}

// thousands writes n with commas between groups of three digits, as the
// README does.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
