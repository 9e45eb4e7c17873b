package migrationtest

import (
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/internal/cli"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// cp has every CRD installed.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { testenv.Main(m, &cp) }

// run runs the odh-serving command line against a control plane.
func run(t *testing.T, on *controlplane.ControlPlane, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	kubeconfig := testenv.Kubeconfig(t, on.Config, "")
	var out, errOut strings.Builder
	code = cli.Main(append(args, "--kubeconfig", kubeconfig), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return out.String(), errOut.String(), code
}
