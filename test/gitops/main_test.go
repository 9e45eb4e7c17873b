package gitops_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/opendatahub-io/odh-serving/test/controlplane"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	var err error
	cp, err = controlplane.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
