package testenv

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/kwokcluster"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package that uses testenv
)

// InitLogger sets controller-runtime's logger, for the packages that run a
// controller: it discards, or with TEST_LOG=1 writes to stderr. Call it
// from init. controller-runtime keeps the first logger it is given, so a
// package that reads the controller's logs sets its own instead.
func InitLogger() {
	w := io.Discard
	if os.Getenv("TEST_LOG") != "" {
		w = os.Stderr
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(w), zap.UseDevMode(true)))
}

// gcPercent is the GOGC UseTestGOGC sets: the control plane's in tests.
const gcPercent = controlplane.TestGOGC

// UseTestGOGC sets GOGC=400, unless GOGC is set or benchmarks run (they
// measure the processes' CPU and memory), for the test binary and, through
// the environment they inherit, the processes it starts: kube-apiserver,
// etcd, helm, odh-serving. At Go's default of 100 they spend about a fifth
// of their CPU collecting garbage (a profile of kube-apiserver in
// test/controller); the tests trade memory for it. Call it from TestMain
// after flag.Parse.
func UseTestGOGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return
	}
	if err := os.Setenv("GOGC", strconv.Itoa(gcPercent)); err != nil {
		panic(err)
	}
	debug.SetGCPercent(gcPercent)
}

// Main is a test package's TestMain: it starts a control plane with every
// CRD, points *cp at it, runs the tests, stops it and exits with the
// tests' code (1 when the control plane fails to start or stop).
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) { testenv.Main(m, &cp) }
func Main(m *testing.M, cp **controlplane.ControlPlane) {
	MainWith(m, cp, controlplane.Options{}, nil)
}

// MainWith is Main with the control plane's options and, when cluster is
// not nil, the cluster's workload half on it (Cluster), stopped after the
// tests before the control plane. A package whose tests use few of the
// CRDs names them in o.CRDs, since installing the others costs
// kube-apiserver CPU (about 6 s for all of AllCRDs).
//
//	var (
//		cp    *controlplane.ControlPlane
//		nodes = testenv.Cluster{LWS: true}
//	)
//
//	func TestMain(m *testing.M) {
//		testenv.MainWith(m, &cp, controlplane.Options{CRDs: []string{crds.LWS}}, &nodes)
//	}
func MainWith(m *testing.M, cp **controlplane.ControlPlane, o controlplane.Options, cluster *Cluster) {
	if cluster != nil {
		cluster.cp = cp
	}
	os.Exit(run(m, cp, o, cluster))
}

// Cluster is test/kwokcluster's workload half (kube-scheduler,
// kube-controller-manager, kwok and its simulated GPU and CPU nodes) on a
// package's control plane (MainWith): the first test that calls Need
// starts it, the package's tests share it, each in namespaces of its own,
// and it is stopped after them. Tests and benchmarks that do not call
// Need, such as those measuring the control plane's CPU, run without it.
// KUBEBUILDER_ASSETS must hold those binaries too
// (`hack/setup-test-assets.sh test`).
type Cluster struct {
	// LWS also runs the LeaderWorkerSet operator (kwokcluster.Options.LWS),
	// so that LeaderWorkerSets get StatefulSets and Pods.
	LWS bool

	cp   **controlplane.ControlPlane
	once sync.Once
	c    *kwokcluster.Cluster
	err  error
}

// Need starts the cluster unless it runs, and fails the test if it could
// not start.
func (c *Cluster) Need(tb testing.TB) *kwokcluster.Cluster {
	tb.Helper()
	if c.cp == nil {
		tb.Fatal("testenv.Cluster: the package's TestMain must pass it to testenv.MainWith")
	}
	c.once.Do(func() { c.c, c.err = kwokcluster.Start((*c.cp).Config, kwokcluster.Options{LWS: c.LWS}) })
	if c.err != nil {
		tb.Fatal(c.err)
	}
	return c.c
}

func (c *Cluster) stop() error {
	if c == nil || c.c == nil {
		return nil
	}
	return c.c.Stop()
}

func run(m *testing.M, cp **controlplane.ControlPlane, o controlplane.Options, cluster *Cluster) int {
	started, err := controlplane.StartWith(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*cp = started
	code := m.Run()
	// The cluster's processes first: they talk to the API server.
	code = exitCode(code, cluster.stop())
	return exitCode(code, started.Stop())
}

// exitCode is code, or 1 when a stop failed after passing tests.
func exitCode(code int, stopErr error) int {
	if stopErr != nil {
		fmt.Fprintln(os.Stderr, stopErr)
		if code == 0 {
			return 1
		}
	}
	return code
}

// StartControlPlane starts a control plane of the test's own, for a test
// that leaves CRDs out or stops the API server, and stops it when the test
// ends.
func StartControlPlane(tb testing.TB, o controlplane.Options) *controlplane.ControlPlane {
	tb.Helper()
	cp, err := controlplane.StartWith(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return cp
}

// StartCluster starts test/kwokcluster's processes and nodes on a control
// plane of the test's own (StartControlPlane), for a test that needs its
// workloads to run there, and stops them when the test ends.
func StartCluster(tb testing.TB, cp *controlplane.ControlPlane) *kwokcluster.Cluster {
	tb.Helper()
	c, err := kwokcluster.Start(cp.Config, kwokcluster.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return c
}
