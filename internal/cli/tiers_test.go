package cli_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/internal/tiertest"
)

// TestRenderTierConfigMapErrors: render with a bad tier ConfigMap in its
// input fails with tier.FromConfigMap's error for that ConfigMap, after
// the document's place, as the controller's and the MaaS API server's
// errors carry it (tiertest.Bad is their table too). A ConfigMap without
// the key tiers is such an error, not an empty tier list.
func TestRenderTierConfigMapErrors(t *testing.T) {
	const prefix = "acme-tier-"
	for _, tc := range tiertest.Bad() {
		if tc.Absent {
			continue // no tier list in the input: no MaaS objects (TestRenderMaaSAccess)
		}
		t.Run(tc.Name, func(t *testing.T) {
			cm, err := yaml.Marshal(tc.ConfigMap())
			if err != nil {
				t.Fatal(err)
			}
			want := "<stdin>:11: " + tc.Want(prefix).Error()
			if i := strings.IndexByte(want, '\n'); i >= 0 {
				want = want[:i] // the first of errors.Join's lines
			}
			failsQuietly(t, maasService+"---\n"+string(cm), want, "render", "-f", "-", "--tier-namespace-prefix", prefix)
		})
	}
}
