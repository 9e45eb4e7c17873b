package overlays_test

import (
	"slices"
	"testing"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var cp *controlplane.ControlPlane

// TestMain installs Kuadrant's CRDs besides the usual ones: the chart
// renders the gateways' AuthPolicies by default (auth.enabled), and the
// dry run applies them as Kuadrant's CRDs would take them.
func TestMain(m *testing.M) {
	testenv.MainWith(m, &cp, controlplane.Options{CRDs: append(slices.Clone(controlplane.AllCRDs), crds.Kuadrant)}, nil)
}
