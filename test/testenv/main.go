package testenv

import (
	"fmt"
	"os"
	"testing"

	"github.com/opendatahub-io/odh-serving/test/controlplane"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package that uses testenv
)

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
