package hostlock

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A claimed port lies outside the kernel's ephemeral range, so that no
// bind to port 0 and no outgoing connection of any process is handed it;
// a port claimed already, or one a process listens on without claiming
// it, is not handed out again.
func TestClaimPort(t *testing.T) {
	dir := t.TempDir()
	first, err := claimPort(dir, localPortRange)
	if err != nil {
		t.Fatal(err)
	}
	if first.Number < FirstPort || first.Number > LastPort {
		t.Fatalf("claimed port %d, want one from %d to %d", first.Number, FirstPort, LastPort)
	}
	if data, err := os.ReadFile(localPortRange); err == nil {
		f := strings.Fields(string(data))
		low, _ := strconv.Atoi(f[0])
		high, _ := strconv.Atoi(f[1])
		if first.Number >= low && first.Number <= high {
			t.Fatalf("claimed port %d lies in the kernel's ephemeral range %d to %d", first.Number, low, high)
		}
	}
	second, err := claimPort(dir, localPortRange)
	if err != nil {
		t.Fatal(err)
	}
	if second.Number == first.Number {
		t.Fatalf("port %d claimed twice", first.Number)
	}
	// A stranger listens on the first port, which it never claimed.
	n := first.Number
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(n))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	third, err := claimPort(dir, localPortRange)
	if err != nil {
		t.Fatal(err)
	}
	if third.Number == n || third.Number == second.Number {
		t.Fatalf("claimed port %d; the stranger listens on %d and this process holds %d", third.Number, n, second.Number)
	}
	for _, p := range []*Port{second, third, nil} {
		if err := p.Release(); err != nil {
			t.Fatal(err)
		}
	}
}

// A kernel whose ephemeral range overlaps the claimed ports could hand
// them to anyone: no port is claimed.
func TestClaimPortRefusesAnOverlappingEphemeralRange(t *testing.T) {
	rangeFile := filepath.Join(t.TempDir(), "ip_local_port_range")
	if err := os.WriteFile(rangeFile, []byte("20500\t60999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := claimPort(t.TempDir(), rangeFile)
	if err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("claimPort with the ephemeral range 20500-60999 = %v, %v; want an error saying they overlap", p, err)
	}
}
