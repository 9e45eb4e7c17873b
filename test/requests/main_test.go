package requests

import (
	"flag"
	"testing"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// cluster is the control plane and kwok cluster every test and benchmark
// of the package shares, each phase in namespaces of its own: GIE's,
// Gateway API's and Kuadrant's CRDs (TestAuth's AuthPolicies).
var cluster = testenv.Shared{Options: controlplane.Options{CRDs: []string{crds.GIE, crds.GatewayAPI, crds.Kuadrant}}}

// TestMain runs the tests' processes at testenv's GOGC, unless GOGC is set
// or benchmarks run, and stops the shared cluster after them.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.UseTestGOGC()
	testenv.MainShared(m, &cluster)
}
