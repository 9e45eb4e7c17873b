package testenv

import (
	"fmt"
	"io"
	"os"
	"testing"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/opendatahub-io/odh-serving/test/controlplane"

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

// Main is a test package's TestMain: it starts a control plane with every
// CRD, points *cp at it, runs the tests, stops it and exits with the
// tests' code (1 when the control plane fails to start or stop).
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) { testenv.Main(m, &cp) }
func Main(m *testing.M, cp **controlplane.ControlPlane) {
	os.Exit(run(m, cp))
}

func run(m *testing.M, cp **controlplane.ControlPlane) int {
	started, err := controlplane.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*cp = started
	code := m.Run()
	if err := started.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
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
