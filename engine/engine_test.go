package engine_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
)

// caseOptions are a golden case's render options (options.yaml).
type caseOptions struct {
	Phase           string `json:"phase"`
	CertMode        string `json:"certMode"`
	InternalGateway string `json:"internalGateway"`
	ImageRegistry   string `json:"imageRegistry"`
	OCIModelSource  string `json:"ociModelSource"`
	// Tiers is the MaaS tier list, as under the tier ConfigMap's key.
	Tiers               string `json:"tiers"`
	TierNamespacePrefix string `json:"tierNamespacePrefix"`
	// GatewayTLS, IstioShadowService and Monitoring are what the
	// controller decides from the cluster.
	GatewayTLS         string `json:"gatewayTLS"`
	IstioShadowService string `json:"istioShadowService"`
	Monitoring         bool   `json:"monitoring"`
	// KEDA "false" renders as for a cluster without KEDA's CRDs.
	KEDA string `json:"keda"`
	// Auth is --enable-auth, AuthAudiences --auth-audiences.
	Auth          bool     `json:"auth"`
	AuthAudiences []string `json:"authAudiences"`
	// MaaSGateway is --maas-gateway-name (in the system namespace).
	MaaSGateway string `json:"maasGateway"`
	// MaaSTierCacheTTL is --maas-tier-cache-ttl.
	MaaSTierCacheTTL int `json:"maasTierCacheTTL"`
	// The Prometheus that ScaledObjects under wva.keda query.
	PrometheusURL             string `json:"prometheusUrl"`
	PrometheusAuthModes       string `json:"prometheusAuthModes"`
	PrometheusTriggerAuthName string `json:"prometheusTriggerAuthName"`
	PrometheusTriggerAuthKind string `json:"prometheusTriggerAuthKind"`
}

// renderCase renders every service in testdata/<name>/input.yaml with the
// shipped presets and the presets in the input, as the CLI does.
func renderCase(tb testing.TB, dir string) []byte {
	tb.Helper()
	in, err := manifest.DecodeFile(filepath.Join(dir, "input.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	catalog := presetstest.Catalog(tb, in.Presets)
	eopts := caseEngineOptions(tb, dir)
	var out bytes.Buffer
	var all []*unstructured.Unstructured
	for _, s := range in.Services {
		res, err := engine.Render(tb.Context(), s.Service, catalog, eopts)
		if err != nil {
			tb.Fatalf("%s: %v", s.Where, err)
		}
		objs, err := res.Unstructured()
		if err != nil {
			tb.Fatal(err)
		}
		all = append(all, objs...)
	}
	if err := manifest.WriteYAML(&out, all); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

// caseEngineOptions are the render options of testdata/<name>: the
// shipped images, and what its options.yaml says.
func caseEngineOptions(tb testing.TB, dir string) engine.Options {
	tb.Helper()
	var opts caseOptions
	if raw, err := os.ReadFile(filepath.Join(dir, "options.yaml")); err == nil {
		if err := yaml.UnmarshalStrict(raw, &opts); err != nil {
			tb.Fatal(err)
		}
	}
	eopts := engine.Options{Images: presetstest.Images(tb)}
	if opts.Phase != "" {
		eopts.Phase = convention.Phase(opts.Phase)
	}
	eopts.CertMode = convention.CertMode(opts.CertMode)
	eopts.InternalGatewayName = opts.InternalGateway
	eopts.ImageRegistry = opts.ImageRegistry
	eopts.OCIModelSource = convention.OCIModelSource(opts.OCIModelSource)
	if opts.Tiers != "" {
		var err error
		if eopts.Tiers, err = tier.Parse(opts.Tiers, opts.TierNamespacePrefix); err != nil {
			tb.Fatal(err)
		}
	}
	eopts.GatewayTLS = convention.GatewayTLS(opts.GatewayTLS)
	eopts.IstioShadowService = opts.IstioShadowService
	eopts.Monitoring = opts.Monitoring
	eopts.WithoutKEDA = opts.KEDA == "false"
	eopts.Auth = opts.Auth
	eopts.AuthAudiences = opts.AuthAudiences
	eopts.MaaSGatewayName = opts.MaaSGateway
	eopts.MaaSTierCacheTTL = opts.MaaSTierCacheTTL
	eopts.Prometheus = build.Prometheus{URL: opts.PrometheusURL, AuthModes: opts.PrometheusAuthModes,
		TriggerAuthName: opts.PrometheusTriggerAuthName, TriggerAuthKind: opts.PrometheusTriggerAuthKind}
	return eopts
}

// loadCase decodes the one service of testdata/<name>/input.yaml, and
// gives the catalog (the shipped presets and the input's) and the options
// (the shipped images) it renders with.
func loadCase(tb testing.TB, name string) (*v1alpha2.LLMInferenceService, *preset.Catalog, engine.Options) {
	tb.Helper()
	file := filepath.Join("testdata", name, "input.yaml")
	in, err := manifest.DecodeFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	if len(in.Services) != 1 {
		tb.Fatalf("%s: want one service, got %d", file, len(in.Services))
	}
	return in.Services[0].Service, presetstest.Catalog(tb, in.Presets), caseEngineOptions(tb, filepath.Dir(file))
}

// TestGolden renders each case under testdata/ and compares the output with
// its expected.yaml. Each case is rendered twice: the bytes must match.
func TestGolden(t *testing.T) {
	dirs := golden.Glob(t, "testdata/*/input.yaml")
	for _, in := range dirs {
		dir := filepath.Dir(in)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			first := renderCase(t, dir)
			if second := renderCase(t, dir); !bytes.Equal(first, second) {
				t.Fatal("two renders of the same input differ")
			}
			golden.Assert(t, filepath.Join(dir, "expected.yaml"), first)
		})
	}
}

// TestNamesFitForLongServiceNames renders every topology for a 63-character
// service name and checks every name and label value.
func TestNamesFitForLongServiceNames(t *testing.T) {
	out := renderCase(t, "testdata/long-name")
	docs, err := manifest.Split("long-name", out)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, d := range docs {
		kinds[d.Object.GetKind()] = true
		checkLength(t, d.Object.GetKind()+" name", d.Object.GetName())
		walkLabels(t, d.Object.Object, d.Object.GetKind()+" "+d.Object.GetName())
	}
	for _, k := range []string{"LeaderWorkerSet", "Deployment", "Service", "InferencePool", "HTTPRoute", "ClusterRoleBinding"} {
		if !kinds[k] {
			t.Errorf("the long-name case must cover a %s", k)
		}
	}
}

func walkLabels(t *testing.T, v any, where string) {
	t.Helper()
	switch m := v.(type) {
	case map[string]any:
		for k, e := range m {
			if k == "labels" || k == "matchLabels" || k == "selector" {
				if labels, ok := e.(map[string]any); ok {
					for lk, lv := range labels {
						if s, ok := lv.(string); ok {
							checkLength(t, where+" label "+lk, s)
						}
					}
				}
			}
			walkLabels(t, e, where)
		}
	case []any:
		for _, e := range m {
			walkLabels(t, e, where)
		}
	}
}

func checkLength(t *testing.T, what, v string) {
	t.Helper()
	if len(v) > 63 {
		t.Errorf("%s %q is %d characters, over 63", what, v, len(v))
	}
	if strings.HasSuffix(what, "LeaderWorkerSet name") && len(v) > 43 {
		t.Errorf("%s %q leaves no room for LWS suffixes", what, v)
	}
}
