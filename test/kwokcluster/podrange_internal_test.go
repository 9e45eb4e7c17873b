package kwokcluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
)

// TestClaimPodRange: clusters that start side by side (two test packages'
// kwok clusters, the demo's) get disjoint pod ranges, skip one another
// process holds, and reuse one given up. Before, every cluster gave its
// pods IPs from 127.1.0.0/16, and two runs' model servers answered at the
// same addresses.
func TestClaimPodRange(t *testing.T) {
	dir := t.TempDir()
	claim := func(want string) *PodRange {
		t.Helper()
		r, err := claimPodRange(dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.CIDR != want {
			t.Fatalf("claimed %s, want %s", r.CIDR, want)
		}
		t.Cleanup(func() { _ = r.Release() })
		return r
	}
	first := claim("127.1.0.0/16")
	claim("127.2.0.0/16")
	other, err := hostlock.Try(dir, "kwok-pods-127.3.0.0-16") // as another process would
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Release() })
	claim("127.4.0.0/16")
	if _, err := hostlock.Try(dir, "kwok-pods-127.1.0.0-16"); !errors.Is(err, hostlock.ErrHeld) {
		t.Fatalf("a claimed range taken again: %v, want ErrHeld", err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	claim("127.1.0.0/16")
	for n := 5; n <= lastPodRange; n++ {
		claim(fmt.Sprintf("127.%d.0.0/16", n))
	}
	_, err = claimPodRange(dir)
	if err == nil || !strings.Contains(err.Error(), "every pod range from 127.1.0.0/16 to 127.99.0.0/16 is held") {
		t.Fatalf("with every range held: %v", err)
	}
}
