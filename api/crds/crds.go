package crds

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml thirdparty
var files embed.FS

// The sets of CRDs, each a folder of the embedded tree.
const (
	Serving    = "."
	GIE        = "thirdparty/gie"
	GatewayAPI = "thirdparty/gateway-api"
	LWS        = "thirdparty/lws"
	// CertManager holds cert-manager's Certificate and Issuer CRDs, for
	// tests of the cert-manager certificate mode.
	CertManager = "thirdparty/cert-manager"
	// Istio holds Istio's DestinationRule CRD, for the DestinationRules
	// that make an Istio gateway originate TLS to the backends.
	Istio = "thirdparty/istio"
	// PrometheusOperator holds the PodMonitor and ServiceMonitor CRDs, for
	// the services' monitors.
	PrometheusOperator = "thirdparty/prometheus-operator"
	// KEDA holds KEDA's ScaledObject CRD, which the ScaledObjects of
	// spec.scaling are checked against. KEDA installs it; odh-serving does
	// not.
	KEDA = "thirdparty/keda"
	// Kuadrant holds Kuadrant's AuthPolicy, RateLimitPolicy and
	// TokenRateLimitPolicy CRDs, which the gateway policies are checked
	// against. Kuadrant installs them; odh-serving does not.
	Kuadrant = "thirdparty/kuadrant"
)

// Load decodes every CRD in the named sets, in a stable order.
func Load(sets ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, set := range sets {
		entries, err := fs.ReadDir(files, set)
		if err != nil {
			return nil, fmt.Errorf("read CRD set %q: %w", set, err)
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			if !e.IsDir() && path.Ext(e.Name()) == ".yaml" {
				names = append(names, e.Name())
			}
		}
		slices.Sort(names)
		for _, name := range names {
			file := path.Join(set, name)
			data, err := files.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("read CRD %s: %w", file, err)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(data, crd); err != nil {
				return nil, fmt.Errorf("decode CRD %s: %w", file, err)
			}
			out = append(out, crd)
		}
	}
	return out, nil
}
