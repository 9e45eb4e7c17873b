package endpointpicker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/presets"
)

// profiles are the scheduler profiles the presets render
// (presets/config-llm-scheduler, annotation
// odh-serving.opendatahub.io/scheduler-profile).
var profiles = []string{"default", "lora", "prefill-decode", "precise-prefix-cache"}

// renderConfigText renders a service with the scheduler profile through the
// engine and the shipped presets and returns its endpoint picker's
// --config-text.
func renderConfigText(t *testing.T, profile string) string {
	t.Helper()
	catalog, err := presets.Default(nil)
	if err != nil {
		t.Fatal(err)
	}
	images, err := presets.Images()
	if err != nil {
		t.Fatal(err)
	}
	svc := &v1alpha2.LLMInferenceService{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "LLMInferenceService"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "svc", Namespace: "team",
			Annotations: map[string]string{"odh-serving.opendatahub.io/scheduler-profile": profile},
		},
		Spec: v1alpha2.LLMInferenceServiceSpec{
			Model: v1alpha2.LLMModelSpec{URI: "hf://org/model", Name: ptr.To("org/model")},
			Router: &v1alpha2.RouterSpec{
				Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}, Scheduler: &v1alpha2.SchedulerSpec{},
			},
		},
	}
	res, err := engine.Render(context.Background(), svc, catalog, engine.Options{Images: images})
	if err != nil {
		t.Fatalf("render a service with profile %s: %v", profile, err)
	}
	for i, o := range res.Objects {
		d, ok := o.(*appsv1.Deployment)
		if !ok || res.Children[i].Role != engine.RoleScheduler {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if i := slices.Index(c.Args, "--config-text"); i >= 0 && i+1 < len(c.Args) {
				return c.Args[i+1]
			}
		}
	}
	t.Fatalf("profile %s: no endpoint picker Deployment with --config-text among the rendered children", profile)
	return ""
}

// TestPresetsRenderLLMDRouterPlugins is the static check of what only
// llm-d-router's endpoint picker can run: every plugin type and parameter
// name our presets render, in every profile, is one llm-d-router registers
// (testdata/llm-d-router-plugins.yaml, llm-d-router-parameters.yaml), and
// none is deprecated there unless listed in knownDeprecated.
func TestPresetsRenderLLMDRouterPlugins(t *testing.T) {
	llmd, err := LLMDRouterPlugins()
	if err != nil {
		t.Fatal(err)
	}
	params := readParameterList(t)
	// What our presets render that llm-d-router has deprecated, and why it
	// stays for now. A new deprecation fails the test until it is listed
	// here or the presets move off it.
	knownDeprecated := map[string]string{
		"type disagg-headers-handler":                                                        "deprecated in v0.9.0 for disagg-profile-handler, removed in v0.11.0; KServe's P/D preset renders it too",
		"precise-prefix-cache-scorer parameter tokenProcessorConfig.blockSize":               "renamed blockSizeTokens in llm-d-router; the presets have not moved yet",
		"precise-prefix-cache-scorer parameter indexerConfig.tokenizersPoolConfig":           "in-process tokenization pool, deprecated; the legacy producer still reads it",
		"precise-prefix-cache-scorer parameter indexerConfig.tokenizersPoolConfig.modelName": "as above",
	}
	seenDeprecated := map[string]bool{}
	for _, profile := range profiles {
		t.Run(profile, func(t *testing.T) {
			var cfg struct {
				APIVersion string `json:"apiVersion"`
				Plugins    []struct {
					Type       string         `json:"type"`
					Name       string         `json:"name"`
					Parameters map[string]any `json:"parameters"`
				} `json:"plugins"`
			}
			if err := yaml.Unmarshal([]byte(renderConfigText(t, profile)), &cfg); err != nil {
				t.Fatalf("the rendered config: %v", err)
			}
			if cfg.APIVersion != "llm-d.ai/v1alpha1" {
				t.Errorf("apiVersion %q; llm-d-router's is llm-d.ai/v1alpha1", cfg.APIVersion)
			}
			if len(cfg.Plugins) == 0 {
				t.Fatal("the rendered config has no plugins")
			}
			for _, p := range cfg.Plugins {
				reg := llmd.Find(p.Type)
				if reg == nil {
					t.Errorf("plugin type %q is not one %s registers at %s", p.Type, llmd.Repository, llmd.Commit)
					continue
				}
				if reg.Deprecated != nil {
					key := "type " + p.Type
					seenDeprecated[key] = true
					if _, ok := knownDeprecated[key]; !ok {
						t.Errorf("plugin type %q is deprecated in %s since %s, removed in %s; use %s", p.Type, llmd.Repository, reg.Deprecated.Since, reg.Deprecated.RemovedIn, reg.Deprecated.Replacement)
					}
				}
				if len(p.Parameters) == 0 {
					continue
				}
				known, ok := params.Plugins[p.Type]
				if !ok {
					t.Errorf("plugin %s has parameters, but testdata/llm-d-router-parameters.yaml lists none of %s's; read them from its source and add them", p.Type, p.Type)
					continue
				}
				for _, path := range paramPaths("", p.Parameters) {
					switch {
					case slices.Contains(known.Names, path):
					case slices.Contains(known.Deprecated, path):
						key := p.Type + " parameter " + path
						seenDeprecated[key] = true
						if _, ok := knownDeprecated[key]; !ok {
							t.Errorf("plugin %s: parameter %s is deprecated in %s at %.7s", p.Type, path, llmd.Repository, llmd.Commit)
						}
					default:
						t.Errorf("plugin %s: parameter %s is not one %s reads at %.7s (%s)", p.Type, path, llmd.Repository, llmd.Commit, strings.Join(known.Source, "; "))
					}
				}
			}
		})
	}
	for key, why := range knownDeprecated {
		if !seenDeprecated[key] {
			t.Errorf("knownDeprecated lists %s (%s), which no profile renders any more: drop it", key, why)
		}
	}
}

// paramPaths lists the JSON key paths in a plugin's parameters, objects
// and the keys inside them.
func paramPaths(prefix string, m map[string]any) []string {
	var out []string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := prefix + k
		out = append(out, p)
		if sub, ok := m[k].(map[string]any); ok {
			out = append(out, paramPaths(p+".", sub)...)
		}
	}
	return out
}

func TestParamPaths(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal([]byte(`{"b":{"c":1,"d":{"e":"x"}},"a":[1]}`), &m); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(paramPaths("", m))
	if want := "[a b b.c b.d b.d.e]"; got != want {
		t.Errorf("paramPaths = %s; want %s", got, want)
	}
}
