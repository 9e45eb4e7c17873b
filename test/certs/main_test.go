package certs_test

import (
	"testing"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var cp *controlplane.ControlPlane

// TestMain installs the serving CRDs alone: the tests publish the CA bundle
// into their conversion webhooks and use no other CRD, and every other one
// would cost the API server CPU to install.
func TestMain(m *testing.M) {
	testenv.MainWith(m, &cp, controlplane.Options{CRDs: []string{crds.Serving}}, nil)
}
