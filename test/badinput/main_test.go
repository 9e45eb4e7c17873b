package badinput

import (
	"flag"
	"testing"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var cp *controlplane.ControlPlane

// TestMain installs the serving CRDs alone: the cases send serving.kserve.io
// objects only (servingObjects), and the bad values files fail helm's
// schema check before helm applies anything. Every other CRD cost the API
// server CPU to install, and checkEmpty a list of each of its kinds.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.UseTestGOGC()
	testenv.MainWith(m, &cp, controlplane.Options{CRDs: []string{crds.Serving}}, nil)
}
