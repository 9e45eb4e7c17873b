package security

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/cli"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// rendered is what one golden input renders to.
type rendered struct {
	// source names the input: a golden case, a preset sample or an example.
	source string
	objs   []*unstructured.Unstructured
	// winners maps each service (namespace/name) to the layer each field
	// of its merged spec came from, as render --explain prints it.
	winners map[string]map[string]string
}

// renderGolden renders every golden input with `odh-serving render`: the
// engine's golden cases (with their options), every preset's sample and
// every example.
func renderGolden(t *testing.T) []rendered {
	t.Helper()
	var inputs [][]string // render arguments
	cases := golden.Glob(t, "../../engine/testdata/*/input.yaml")
	for _, c := range cases {
		inputs = append(inputs, append([]string{"-f", c}, caseFlags(t, filepath.Dir(c))...))
	}
	for _, pattern := range []string{"../../presets/*/sample.yaml", "../../examples/*.yaml", "../../examples/gpu/*.yaml"} {
		files := golden.Glob(t, pattern)
		for _, f := range files {
			inputs = append(inputs, []string{"-f", f})
		}
	}
	inputs = append(inputs, []string{"-f", "../../examples/team-preset/presets.yaml", "-f", "../../examples/team-preset/service.yaml"})
	if len(inputs) < 40 {
		t.Fatalf("only %d golden inputs", len(inputs))
	}
	out := make([]rendered, 0, len(inputs))
	for _, args := range inputs {
		var stdout, stderr bytes.Buffer
		if code := cli.Main(append([]string{"render", "--explain"}, args...), cli.Streams{In: &bytes.Buffer{}, Out: &stdout, Err: &stderr}); code != 0 {
			t.Fatalf("render %v: %s", args, stderr.String())
		}
		docs, err := manifest.Split(args[1], stdout.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		r := rendered{source: args[1], winners: parseExplain(stderr.String())}
		for _, d := range docs {
			r.objs = append(r.objs, d.Object)
		}
		out = append(out, r)
	}
	return out
}

// optionFlags maps the keys of a golden case's options.yaml to render
// flags.
var optionFlags = map[string]string{
	"phase":           "--migration-phase",
	"certMode":        "--cert-mode",
	"internalGateway": "--internal-gateway-name",
	"imageRegistry":   "--image-registry",
	"ociModelSource":  "--oci-model-source",
	// What the controller learns from the cluster (engine.AddPlatformFlags).
	"gatewayTLS":         "--gateway-tls",
	"istioShadowService": "--istio-shadow-service",
	"monitoring":         "--monitoring",
	"auth":               "--enable-auth",
	"authAudiences":      "--auth-audiences",
	// tiers is not a flag: render reads the tier list from the ConfigMap
	// tier-to-group-mapping in its input (see tiersInput).
	"tierNamespacePrefix": "--tier-namespace-prefix",
	"maasGateway":         "--maas-gateway-name",
	"maasTierCacheTTL":    "--maas-tier-cache-ttl",

	"keda":                      "--keda",
	"prometheusUrl":             "--prometheus-url",
	"prometheusAuthModes":       "--prometheus-auth-modes",
	"prometheusTriggerAuthName": "--prometheus-trigger-auth-name",
	"prometheusTriggerAuthKind": "--prometheus-trigger-auth-kind",
}

// caseFlags turns a golden case's options.yaml into render flags.
func caseFlags(t *testing.T, dir string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "options.yaml"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var opts map[string]any
	if err := yaml.Unmarshal(raw, &opts); err != nil {
		t.Fatalf("%s/options.yaml: %v", dir, err)
	}
	var flags []string
	for _, key := range slices.Sorted(maps.Keys(opts)) {
		value := fmt.Sprint(opts[key])
		if list, ok := opts[key].([]any); ok {
			// A list flag takes its items comma-separated.
			items := make([]string, 0, len(list))
			for _, v := range list {
				items = append(items, fmt.Sprint(v))
			}
			value = strings.Join(items, ",")
		}
		if key == "tiers" {
			flags = append(flags, "-f", tiersInput(t, value))
			continue
		}
		flag, ok := optionFlags[key]
		if !ok {
			t.Fatalf("%s/options.yaml: no render flag known for %q; add it to optionFlags", dir, key)
		}
		// flag=value: a boolean flag takes its value no other way.
		flags = append(flags, flag+"="+value)
	}
	return flags
}

// tiersInput writes the ConfigMap tier-to-group-mapping holding a golden
// case's tiers option, for render to read beside the service.
func tiersInput(t *testing.T, tiers string) string {
	t.Helper()
	cm := map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": "tier-to-group-mapping"},
		"data":       map[string]string{"tiers": tiers},
	}
	raw, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiers.yaml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// parseExplain reads render --explain's "# ns/name: the layer each field
// comes from" sections ("#  field <- layer" lines).
func parseExplain(text string) map[string]map[string]string {
	out := map[string]map[string]string{}
	var cur map[string]string
	for _, line := range strings.Split(text, "\n") {
		if svc, ok := strings.CutSuffix(line, ": the layer each field comes from"); ok {
			cur = map[string]string{}
			out[strings.TrimPrefix(svc, "# ")] = cur
			continue
		}
		if field, layer, ok := strings.Cut(strings.TrimPrefix(line, "#  "), " <- "); ok && cur != nil {
			cur[field] = layer
		}
	}
	return out
}
