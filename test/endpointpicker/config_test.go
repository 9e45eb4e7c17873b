package endpointpicker

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	gieconfig "sigs.k8s.io/gateway-api-inference-extension/apix/config/v1alpha1"
	"sigs.k8s.io/yaml"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

// TestAdaptRenderedProfiles adapts what the presets render for each
// profile: the default and lora profiles lose no-hit-lru-scorer and run;
// prefill-decode and precise-prefix-cache cannot run. What is adapted
// decodes strictly as GIE's EndpointPickerConfig, as GIE's loader does, and
// differs from the rendered config in the apiVersion and the dropped plugins
// alone.
func TestAdaptRenderedProfiles(t *testing.T) {
	cases := map[string]struct {
		dropped    []string
		unrunnable []string
	}{
		"default": {dropped: []string{"no-hit-lru-scorer"}},
		"lora":    {dropped: []string{"no-hit-lru-scorer"}},
		"prefill-decode": {
			dropped: []string{"disagg-headers-handler", "prefill-filter", "decode-filter", "always-disagg-pd-decider", "active-request-scorer", "disagg-profile-handler"},
			unrunnable: []string{
				"plugin disagg-headers-handler: the profile handler disagg-headers-handler is llm-d-router's; GIE's endpoint picker has only single-profile-handler",
				"plugin disagg-profile-handler: the profile handler disagg-profile-handler is llm-d-router's; GIE's endpoint picker has only single-profile-handler",
				"profile prefill: the filter prefill-filter is llm-d-router's; without it the profile would pick pods it must not",
				"profile decode: the filter decode-filter is llm-d-router's; without it the profile would pick pods it must not",
			},
		},
		"precise-prefix-cache": {
			dropped:    []string{"precise-prefix-cache-scorer"},
			unrunnable: []string{"profile default: its heaviest scorer precise-prefix-cache-scorer (weight 3) is llm-d-router's; the profile would score by something else"},
		},
	}
	scheme := runtime.NewScheme()
	if err := gieconfig.Install(scheme); err != nil {
		t.Fatal(err)
	}
	strict := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder()
	for _, profile := range profiles {
		t.Run(profile, func(t *testing.T) {
			want, ok := cases[profile]
			if !ok {
				t.Fatalf("no expectation for profile %s", profile)
			}
			rendered := renderConfigText(t, profile)
			got, err := Adapt(rendered)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.dropped, got.Dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want.unrunnable, got.Unrunnable); diff != "" {
				t.Errorf("unrunnable (-want +got):\n%s", diff)
			}
			if got.Runnable() != (len(want.unrunnable) == 0) {
				t.Errorf("Runnable() = %v with reasons %q", got.Runnable(), got.Unrunnable)
			}
			cfg := &gieconfig.EndpointPickerConfig{}
			if err := runtime.DecodeInto(strict, []byte(got.Config), cfg); err != nil {
				t.Fatalf("GIE's strict decoding of the adapted config: %v\n%s", err, got.Config)
			}
			for _, p := range cfg.Plugins {
				if !slices.Contains(GIEPluginTypes, p.Type) {
					t.Errorf("the adapted config keeps plugin type %s, which GIE %s does not register", p.Type, GIEVersion)
				}
			}
			// Only the two changes: undo them on the rendered config and compare.
			if diff := cmp.Diff(undoAdapt(t, rendered, got.Dropped), asMap(t, got.Config)); diff != "" {
				t.Errorf("the adapted config changes more than apiVersion and the dropped plugins (-rendered, adapted by hand +Adapt):\n%s", diff)
			}
			lines := strings.Split(got.Diff, "\n")
			for _, line := range []string{"- apiVersion: llm-d.ai/v1alpha1", "+ apiVersion: " + GIEAPIVersion} {
				if !slices.Contains(lines, line) {
					t.Errorf("the diff lacks the line %q:\n%s", line, got.Diff)
				}
			}
			for _, name := range want.dropped {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "- ") && strings.HasSuffix(l, "- type: "+name) }) {
					t.Errorf("the diff does not remove plugin %s:\n%s", name, got.Diff)
				}
			}
		})
	}
}

// undoAdapt applies Adapt's two changes to a rendered config as plain maps:
// GIE's apiVersion, and the dropped plugins gone from the list and from each
// profile.
func undoAdapt(t *testing.T, rendered string, dropped []string) map[string]any {
	t.Helper()
	m := asMap(t, rendered)
	m["apiVersion"] = GIEAPIVersion
	named := func(p any, key string) string {
		pm := p.(map[string]any)
		if n, ok := pm[key].(string); ok && n != "" {
			return n
		}
		return pm["type"].(string)
	}
	m["plugins"] = slices.DeleteFunc(m["plugins"].([]any), func(p any) bool { return slices.Contains(dropped, named(p, "name")) })
	for _, prof := range m["schedulingProfiles"].([]any) {
		pm := prof.(map[string]any)
		pm["plugins"] = slices.DeleteFunc(pm["plugins"].([]any), func(p any) bool { return slices.Contains(dropped, named(p, "pluginRef")) })
	}
	return m
}

func asMap(t *testing.T, text string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return m
}

func TestAdapt(t *testing.T) {
	cases := []struct {
		name       string
		in         string
		dropped    []string
		unrunnable []string
		err        string
	}{{
		name: "a named plugin is dropped by its name",
		in: `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: single-profile-handler
- name: lru
  type: no-hit-lru-scorer
- type: queue-scorer
- type: max-score-picker
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: lru
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: max-score-picker
`,
		dropped: []string{"lru"},
	}, {
		name: "a dropped scorer as heavy as the heaviest kept one leaves a profile that scores by something else",
		in: `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: active-request-scorer
- type: queue-scorer
schedulingProfiles:
- name: p
  plugins:
  - pluginRef: active-request-scorer
    weight: 2
  - pluginRef: queue-scorer
    weight: 2
`,
		dropped:    []string{"active-request-scorer"},
		unrunnable: []string{"profile p: its heaviest scorer active-request-scorer (weight 2) is llm-d-router's; the profile would score by something else"},
	}, {
		name: "a profile with nothing left",
		in: `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: decode-filter
schedulingProfiles:
- name: only
  plugins:
  - pluginRef: decode-filter
`,
		dropped: []string{"decode-filter"},
		unrunnable: []string{
			"profile only: the filter decode-filter is llm-d-router's; without it the profile would pick pods it must not",
			"profile only: nothing is left that GIE's endpoint picker runs",
		},
	}, {
		name: "a type neither endpoint picker registers",
		in:   "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: queue-scorer\n- type: made-up-scorer\n",
		err:  `plugin made-up-scorer (line 5): type "made-up-scorer" is registered neither by GIE v1.3.1 nor by github.com/llm-d/llm-d-router at ebab687`,
	}, {
		name: "a plugin without a type",
		in:   "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- name: x\n",
		err:  "the plugin at line 4 has no type",
	}, {
		name: "another kind",
		in:   "apiVersion: v1\nkind: ConfigMap\n",
		err:  `kind "ConfigMap", want EndpointPickerConfig`,
	}, {
		name: "not a mapping",
		in:   "- a\n",
		err:  "not a YAML mapping",
	}, {
		name: "a weight that is not a number",
		in:   "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: queue-scorer\nschedulingProfiles:\n- name: p\n  plugins:\n  - pluginRef: queue-scorer\n    weight: heavy\n",
		err:  `profile p: plugin queue-scorer: weight "heavy" (line 8) is not a whole number`,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Adapt(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v; want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.dropped, got.Dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.unrunnable, got.Unrunnable); diff != "" {
				t.Errorf("unrunnable (-want +got):\n%s", diff)
			}
			if strings.Contains(got.Config, "llm-d.ai") || !strings.Contains(got.Config, "apiVersion: "+GIEAPIVersion) {
				t.Errorf("apiVersion not GIE's:\n%s", got.Config)
			}
		})
	}
}

func TestLineDiff(t *testing.T) {
	got := lineDiff("a\nb\nc\nd\n", "a\nx\nc\nd\ne\n")
	want := "  a\n- b\n+ x\n  c\n  d\n+ e\n"
	if got != want {
		t.Errorf("lineDiff:\n%s\nwant:\n%s", got, want)
	}
}
