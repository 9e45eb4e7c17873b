package endpointpicker

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// fakeEnv makes this test binary, run by Start, play an endpoint picker: it
// binds ":<--grpc-port>" half a second after it starts, as GIE's binds
// its ports only once it has started, and exits with the error when it
// cannot.
const fakeEnv = "ENDPOINTPICKER_FAKE"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		fakePicker()
	}
	os.Exit(m.Run())
}

func fakePicker() {
	i := slices.Index(os.Args, "--grpc-port")
	if i < 0 || i+1 >= len(os.Args) {
		fmt.Fprintln(os.Stderr, "no --grpc-port")
		os.Exit(2)
	}
	time.Sleep(500 * time.Millisecond)
	ln, err := net.Listen("tcp", ":"+os.Args[i+1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "gRPC server failed to listen - %v\n", err)
		os.Exit(1)
	}
	time.Sleep(time.Minute)
	_ = ln.Close()
	os.Exit(0)
}

func startFake(t *testing.T) (*Process, *testenv.Buffer) {
	t.Helper()
	t.Setenv(fakeEnv, "1")
	out := &testenv.Buffer{}
	p, err := Start(os.Args[0], []string{"--grpc-port", "9002", "--pool-name", "p"}, "/nonexistent", out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, out
}

// The endpoint picker gets ports the kernel never hands out (claimed among
// this machine's processes), and Serving returns once it listens at its
// gRPC port itself.
func TestStartServing(t *testing.T) {
	p, out := startFake(t)
	if got := p.Args[slices.Index(p.Args, "--grpc-port")+1]; p.Addr != "127.0.0.1:"+got {
		t.Errorf("Addr %s, --grpc-port %s", p.Addr, got)
	}
	for _, flag := range PortFlags {
		i := slices.Index(p.Args, flag)
		if i < 0 || slices.Index(p.Args[i+1:], flag) >= 0 {
			t.Fatalf("args %q: want %s once", p.Args, flag)
		}
		if n, _ := strconv.Atoi(p.Args[i+1]); n < hostlock.FirstPort || n > hostlock.LastPort {
			t.Errorf("%s %d: want a claimed port, from %d to %d", flag, n, hostlock.FirstPort, hostlock.LastPort)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := p.Serving(ctx); err != nil {
		t.Fatalf("%v; its output: %s", err, out)
	}
}

// When another process takes the gRPC port before the endpoint picker
// binds it, the endpoint picker exits, and Serving says so and names the
// process that listens there: the gateway is never sent to it.
func TestServingRefusesAStrangerAtThePort(t *testing.T) {
	p, out := startFake(t)
	stranger, err := net.Listen("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = p.Serving(ctx)
	if err == nil || !strings.Contains(err.Error(), "exited before it listened") || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("Serving with a stranger (pid %d) at %s: %v; want an error saying the endpoint picker exited, naming the stranger; its output: %s", os.Getpid(), p.Addr, err, out)
	}
}
