package gitops_test

import (
	"testing"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var cp *controlplane.ControlPlane

// TestMain installs the Gateway API CRDs alone: the one test that writes to
// the API server applies an HTTPRoute, and every other CRD would cost the
// API server CPU to install.
func TestMain(m *testing.M) {
	testenv.MainWith(m, &cp, controlplane.Options{CRDs: []string{crds.GatewayAPI}}, nil)
}
