package endpointpicker

import (
	_ "embed"
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"
)

// PluginList is what an endpoint picker's source registers: the plugin
// types its cmd/epp/runner/runner.go registers, read from the repository at
// a commit (testdata/llm-d-router-plugins.yaml holds llm-d-router's).
type PluginList struct {
	Repository string `json:"repository"`
	Commit     string `json:"commit"`
	// Types are sorted by name.
	Types []RegisteredType `json:"types"`
}

// RegisteredType is one registered plugin type.
type RegisteredType struct {
	Type string `json:"type"`
	// Source is the file, in the repository, that declares the type's name.
	Source string `json:"source"`
	// Deprecated is set for a type registered as deprecated: since which
	// release, removed in which, and what replaces it.
	Deprecated *Deprecation `json:"deprecated,omitempty"`
}

// Deprecation says when a registered type goes away.
type Deprecation struct {
	Since       string `json:"since"`
	RemovedIn   string `json:"removedIn"`
	Replacement string `json:"replacement,omitempty"`
}

// Has says whether the list registers the plugin type t.
func (l *PluginList) Has(t string) bool { return l.Find(t) != nil }

// Find returns the registration of plugin type t, or nil.
func (l *PluginList) Find(t string) *RegisteredType {
	i := slices.IndexFunc(l.Types, func(r RegisteredType) bool { return r.Type == t })
	if i < 0 {
		return nil
	}
	return &l.Types[i]
}

//go:embed testdata/llm-d-router-plugins.yaml
var llmdRouterPluginsYAML []byte

// LLMDRouterPlugins returns what llm-d-router's endpoint picker registers,
// at the commit testdata/llm-d-router-plugins.yaml names.
func LLMDRouterPlugins() (*PluginList, error) {
	l := &PluginList{}
	if err := yaml.UnmarshalStrict(llmdRouterPluginsYAML, l); err != nil {
		return nil, fmt.Errorf("testdata/llm-d-router-plugins.yaml: %w", err)
	}
	return l, nil
}

// GIEVersion is the gateway-api-inference-extension release whose endpoint
// picker hack/setup-test-assets.sh builds (the version in go.mod).
const GIEVersion = "v1.3.1"

// GIEPluginTypes are the plugin types GIE's endpoint picker at GIEVersion
// registers (cmd/epp/runner/runner.go, registerInTreePlugins); a test reads
// them from the module's source.
var GIEPluginTypes = []string{
	"destination-endpoint-served-verifier",
	"header-based-testing-filter",
	"kv-cache-utilization-scorer",
	"lora-affinity-scorer",
	"max-score-picker",
	"metrics-data-source",
	"model-server-protocol-metrics",
	"predicted-latency-scorer",
	"prefix-cache-scorer",
	"queue-scorer",
	"random-picker",
	"running-requests-size-scorer",
	"single-profile-handler",
	"weighted-random-picker",
}
