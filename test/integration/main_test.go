package integration

import (
	"flag"
	"testing"

	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	flag.Parse()
	testenv.UseTestGOGC()
	testenv.Main(m, &cp)
}
