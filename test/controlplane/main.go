package controlplane

import (
	"fmt"
	"os"
	"testing"
)

// RunTests is a test package's TestMain: it starts a control plane, points
// *cp at it, runs the tests and stops it, and returns the exit code.
//
//	func TestMain(m *testing.M) { os.Exit(controlplane.RunTests(m, &cp)) }
func RunTests(m *testing.M, cp **ControlPlane) int {
	started, err := Start()
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
