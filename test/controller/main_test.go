package controllertest

import (
	"testing"

	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { testenv.Main(m, &cp) }
