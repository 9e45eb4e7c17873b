package convention_test

import (
	"testing"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

// Each Parse function takes its values and names them all, in order, when
// it refuses one.
func TestParse(t *testing.T) {
	check := func(t *testing.T, parse func(string) error, values []string, bad, want string) {
		t.Helper()
		for _, v := range values {
			if err := parse(v); err != nil {
				t.Errorf("%q: %v", v, err)
			}
		}
		if err := parse(bad); err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %q", bad, err, want)
		}
	}
	check(t, func(s string) error { _, err := convention.ParsePhase(s); return err },
		[]string{"alpha2", "dual", "v1", "retired"}, "v2", `unknown migration phase "v2": want alpha2, dual, v1 or retired`)
	check(t, func(s string) error { _, err := convention.ParseCertMode(s); return err },
		[]string{"self-signed", "service-ca", "cert-manager"}, "", `unknown certificate mode "": want self-signed, service-ca or cert-manager`)
	check(t, func(s string) error { _, err := convention.ParseOCIModelSource(s); return err },
		[]string{"modelcar", "image-volume"}, "Modelcar", `unknown OCI model source "Modelcar": want modelcar or image-volume`)
	check(t, func(s string) error { _, err := convention.ParseGatewayTLS(s); return err },
		[]string{"none", "istio", "backend-tls-policy"}, "envoy", `unknown gateway TLS "envoy": want none, istio or backend-tls-policy`)
}
