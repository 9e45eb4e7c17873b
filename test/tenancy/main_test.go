package tenancy

import (
	"flag"
	"testing"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func init() { testenv.InitLogger() }

var (
	// cp is the control plane the package's tests share: our CRDs (a
	// tenant's LLMInferenceService goes through the validating webhook),
	// GIE's, Gateway API's and Kuadrant's.
	cp *controlplane.ControlPlane
	// nodes is the kwok cluster on cp, started by the first test.
	nodes testenv.Cluster
)

// TestMain runs the tests at testenv's GOGC, unless GOGC is set, and stops
// the shared control plane and cluster after them.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.UseTestGOGC()
	testenv.MainWith(m, &cp, controlplane.Options{CRDs: []string{crds.Serving, crds.GIE, crds.GatewayAPI, crds.Kuadrant}}, &nodes)
}
