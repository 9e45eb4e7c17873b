package tier_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/tiertest"
)

// TestFromConfigMap: each bad ConfigMap's error names the ConfigMap and
// the key, says what is wrong, and wraps its sentinel.
func TestFromConfigMap(t *testing.T) {
	const what = "ConfigMap " + tiertest.Namespace + "/" + tiertest.Name + ": "
	want := map[string]string{
		"no ConfigMap":    what + "not found",
		"no key":          what + "no key tiers",
		"no data":         what + "no key tiers",
		"not YAML":        what + "key tiers: not a YAML list of {name, displayName, description, level, groups}: error converting YAML to JSON",
		"misspelt field":  what + `key tiers: not a YAML list of {name, displayName, description, level, groups}: error unmarshaling JSON: while decoding JSON: json: unknown field "levl"`,
		"empty list":      what + "key tiers: no tiers",
		"empty value":     what + "key tiers: no tiers",
		"duplicate name":  what + `key tiers: invalid tiers: tiers[1] ("free"): the name is also tiers[0]'s`,
		"not a namespace": what + `key tiers: invalid tiers: tiers[0] ("Free_Tier"): the tier's namespace "maas-default-gateway-tier-Free_Tier" is not a valid name`,
	}
	for _, tc := range tiertest.Bad() {
		t.Run(tc.Name, func(t *testing.T) {
			err := tc.Want("")
			if !errors.Is(err, tc.Err) {
				t.Errorf("error %v does not wrap %v", err, tc.Err)
			}
			w, ok := want[tc.Name]
			if !ok {
				t.Fatalf("no message for case %q", tc.Name)
			}
			if err == nil || !strings.HasPrefix(err.Error(), w) {
				t.Errorf("error %v, want it to start with %q", err, w)
			}
		})
	}
}

// TestFromConfigMapGood reads a good ConfigMap; one read from a file,
// without a namespace, is named by its name alone.
func TestFromConfigMapGood(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tier.ConfigMapName}, Data: map[string]string{tier.ConfigMapKey: odhTiers}}
	c, err := tier.FromConfigMap(cm, "acme-tier-")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Names(), ","); got != "free,premium,enterprise,partner" || c.Namespace("free") != "acme-tier-free" {
		t.Errorf("tiers %s, namespace of free %s", got, c.Namespace("free"))
	}
	delete(cm.Data, tier.ConfigMapKey)
	if _, err := tier.FromConfigMap(cm, ""); err == nil || err.Error() != "ConfigMap tier-to-group-mapping: no key tiers" {
		t.Errorf("error %v, want it to name the ConfigMap by name", err)
	}
}
