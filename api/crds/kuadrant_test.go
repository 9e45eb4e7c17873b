package crds_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/api/crds"
)

// TestKuadrantCRDsAreUnmodified checks the Kuadrant CRDs against the
// checksums recorded when they were copied from kuadrant-operator
// (thirdparty/kuadrant/README.md), and that each loads: a hand edit fails
// here, not only in make verify.
func TestKuadrantCRDsAreUnmodified(t *testing.T) {
	dir := filepath.Join("thirdparty", "kuadrant")
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != 3 {
		t.Fatalf("SHA256SUMS lists %d files, want the 3 Kuadrant CRDs", len(lines))
	}
	for _, line := range lines {
		want, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: bad line %q", line)
		}
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: sha256 %s, want %s from SHA256SUMS: the copy was edited", file, got, want)
		}
	}
	defs, err := crds.Load(crds.Kuadrant)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	want := "authpolicies.kuadrant.io ratelimitpolicies.kuadrant.io tokenratelimitpolicies.kuadrant.io"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("Load(Kuadrant) = %s, want %s", got, want)
	}
}
