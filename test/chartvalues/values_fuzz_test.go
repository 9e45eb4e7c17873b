package chartvalues

import (
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmengine "helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"

	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// servicesTemplate is the chart template that turns values into services.
const servicesTemplate = "odh-serving/templates/llminferenceservices.yaml"

// located is how decode errors of the chart's output start.
var located = regexp.MustCompile(`^` + regexp.QuoteMeta(servicesTemplate) + `:\d+: `)

// FuzzValuesToServices renders the chart's services template with random
// `services:` values (YAML), seeded with the chart's ci values and the
// services of every golden case, then decodes and renders what it writes.
// Values the chart's schema refuses are refused by helm install too and end
// there. Properties:
//   - no panic;
//   - deterministic: the same values give the same manifests and renders;
//   - every decode error names file:line, every render error the service.
//
// Run it longer with: go test ./test/chartvalues -run '^$' -fuzz '^FuzzValuesToServices$' -fuzztime 2m
func FuzzValuesToServices(f *testing.F) {
	ch, err := loader.Load("../../charts/odh-serving")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range seedServices(f) {
		f.Add(s)
	}
	catalog, images := presetstest.Catalog(f, nil), presetstest.Images(f)
	f.Fuzz(func(t *testing.T, servicesYAML []byte) {
		var services map[string]any
		if err := yaml.Unmarshal(servicesYAML, &services); err != nil || services == nil {
			return
		}
		first, ok := renderChart(t, ch, services)
		if !ok {
			return
		}
		second, _ := renderChart(t, ch, services)
		if first != second {
			t.Fatalf("the chart rendered the same values twice differently:\n%s\n---\n%s", first, second)
		}
		in, err := manifest.Decode(servicesTemplate, []byte(first))
		if err != nil {
			for _, e := range golden.Leaves(err) {
				if !located.MatchString(e.Error()) {
					t.Fatalf("decode error %q does not start with %s:<line>", e, servicesTemplate)
				}
			}
			return
		}
		for _, s := range in.Services {
			a := render(t, s, catalog, images)
			if b := render(t, s, catalog, images); a != b {
				t.Fatalf("%s rendered twice differently", s.Where)
			}
		}
	})
}

// renderChart renders the services template as helm install would, with
// the release in namespace team. ok is false when the chart's schema or
// templates refuse the values.
func renderChart(t *testing.T, ch *chart.Chart, services map[string]any) (string, bool) {
	t.Helper()
	vals, err := chartutil.ToRenderValues(ch, map[string]any{"services": services},
		chartutil.ReleaseOptions{Name: "fuzz", Namespace: "team", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return "", false
	}
	out, err := helmengine.Render(ch, vals)
	if err != nil {
		return "", false
	}
	return out[servicesTemplate], true
}

// render renders one service and returns its output or its error, which
// must name the service.
func render(t *testing.T, s *manifest.Service, catalog *preset.Catalog, images map[string]string) string {
	t.Helper()
	res, err := engine.Render(t.Context(), s.Service.DeepCopy(), catalog, engine.Options{Images: images})
	if err != nil {
		name := "render LLMInferenceService " + s.Service.Namespace + "/" + s.Service.Name
		if !strings.Contains(err.Error(), name) {
			t.Fatalf("render error %q does not name the service (%s)", err, name)
		}
		return err.Error()
	}
	out, err := res.YAML()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// seedServices returns `services:` values: the chart's ci values' and, one
// service each, the services of the engine's golden cases.
func seedServices(f *testing.F) [][]byte {
	f.Helper()
	var seeds [][]byte
	values := golden.Glob(f, "../../charts/odh-serving/ci/*-values.yaml")
	for _, v := range values {
		data := golden.Read(f, v)
		var doc struct {
			Services map[string]any `json:"services"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			f.Fatal(err)
		}
		if doc.Services != nil {
			seeds = append(seeds, mustYAML(f, doc.Services))
		}
	}
	cases := golden.Glob(f, "../../engine/testdata/*/input.yaml")
	for _, c := range cases {
		in, err := manifest.DecodeFile(c)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range in.Services {
			entry := map[string]any{"spec": s.Service.Spec}
			if len(s.Service.Annotations) > 0 {
				entry["annotations"] = s.Service.Annotations
			}
			seeds = append(seeds, mustYAML(f, map[string]any{s.Service.Name: entry}))
		}
	}
	if len(seeds) < 20 {
		f.Fatalf("only %d seeds", len(seeds))
	}
	return seeds
}

func mustYAML(f *testing.F, v any) []byte {
	f.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		f.Fatal(err)
	}
	return data
}
