package requests

import (
	"flag"
	"testing"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var (
	// cp is the control plane every test and benchmark of the package
	// shares, each phase in namespaces of its own: GIE's, Gateway API's
	// and Kuadrant's CRDs (TestAuth's AuthPolicies).
	cp *controlplane.ControlPlane
	// nodes is the kwok cluster on cp, started by the first phase
	// (startPhase).
	nodes testenv.Cluster
)

// TestMain runs the tests' processes at testenv's GOGC, unless GOGC is set
// or benchmarks run, and stops the shared control plane and cluster after
// them.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.UseTestGOGC()
	testenv.MainWith(m, &cp, controlplane.Options{CRDs: []string{crds.GIE, crds.GatewayAPI, crds.Kuadrant}}, &nodes)
}
