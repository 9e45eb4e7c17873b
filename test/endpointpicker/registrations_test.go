package endpointpicker

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

var (
	llmdRouterDir    = flag.String("llm-d-router", "", "rewrite testdata/llm-d-router-plugins.yaml from this checkout of github.com/llm-d/llm-d-router (with -llm-d-router-commit)")
	llmdRouterCommit = flag.String("llm-d-router-commit", "", "the commit the -llm-d-router checkout is at")
)

const (
	llmdRouterRepository = "github.com/llm-d/llm-d-router"
	llmdRouterRegistry   = "github.com/llm-d/llm-d-router/pkg/epp/framework/interface/plugin"
	gieRegistry          = "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/plugins"
	pluginListFile       = "testdata/llm-d-router-plugins.yaml"
	pluginListHeader     = `# The plugin types github.com/llm-d/llm-d-router's endpoint picker registers
# (cmd/epp/runner/runner.go) at the commit below, with the file that names each
# and the releases that deprecate and remove the deprecated ones. Written by
#   git -C LLM_D_ROUTER archive COMMIT go.mod cmd pkg | tar -x -C DIR
#   go test ./test/endpointpicker -run TestLLMDRouterPluginList -llm-d-router DIR -llm-d-router-commit COMMIT
# Do not edit by hand.
`
)

// TestLLMDRouterPluginList checks the pinned list of llm-d-router's plugin
// types, or writes it from a checkout (-llm-d-router).
func TestLLMDRouterPluginList(t *testing.T) {
	if *llmdRouterDir != "" {
		if *llmdRouterCommit == "" {
			t.Fatal("-llm-d-router needs -llm-d-router-commit: the commit the checkout is at")
		}
		types, err := extractRegistrations(*llmdRouterDir, llmdRouterRegistry)
		if err != nil {
			t.Fatalf("read llm-d-router's registrations: %v", err)
		}
		out, err := yaml.Marshal(PluginList{Repository: llmdRouterRepository, Commit: *llmdRouterCommit, Types: types})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pluginListFile, append([]byte(pluginListHeader), out...), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d plugin types at %s", pluginListFile, len(types), *llmdRouterCommit)
		return
	}
	l, err := LLMDRouterPlugins()
	if err != nil {
		t.Fatal(err)
	}
	if l.Repository != llmdRouterRepository || len(l.Commit) != 40 {
		t.Errorf("%s: repository %q commit %q; want %s at a full commit hash", pluginListFile, l.Repository, l.Commit, llmdRouterRepository)
	}
	if len(l.Types) == 0 {
		t.Fatalf("%s lists no plugin types", pluginListFile)
	}
	if !slices.IsSortedFunc(l.Types, func(a, b RegisteredType) int { return strings.Compare(a.Type, b.Type) }) {
		t.Errorf("%s: types not sorted; regenerate it", pluginListFile)
	}
	for _, r := range l.Types {
		if r.Deprecated != nil && r.Deprecated.Replacement != "" && !l.Has(r.Deprecated.Replacement) {
			t.Errorf("%s: %s is replaced by %s, which is not registered", pluginListFile, r.Type, r.Deprecated.Replacement)
		}
	}
}

// TestGIEPluginTypes checks GIEPluginTypes against the source of GIE's
// endpoint picker in the module cache, at the version go.mod requires.
func TestGIEPluginTypes(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", "sigs.k8s.io/gateway-api-inference-extension").Output()
	if err != nil {
		t.Fatalf("go list the GIE module: %v", err)
	}
	version, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if version != GIEVersion {
		t.Errorf("go.mod requires GIE %s, GIEVersion is %s", version, GIEVersion)
	}
	if dir == "" {
		t.Skipf("GIE %s is not in the module cache (go mod download)", version)
	}
	regs, err := extractRegistrations(dir, gieRegistry)
	if err != nil {
		t.Fatalf("read GIE %s's registrations in %s: %v", version, dir, err)
	}
	var got []string
	for _, r := range regs {
		got = append(got, r.Type)
	}
	want := slices.Sorted(slices.Values(GIEPluginTypes))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GIEPluginTypes differ from what GIE %s's %s registers (-GIEPluginTypes +source):\n%s", version, filepath.Join(dir, runnerFile), diff)
	}
}

// TestExtractRegistrations reads a small made-up module: a type registered
// by a constant of another package, one deprecated, one through a constant
// that names another, one twice, and calls that are not registrations.
func TestExtractRegistrations(t *testing.T) {
	root := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/picker\n\ngo 1.25\n")
	write("reg/reg.go", "package reg\nfunc Register(string, any) {}\nfunc RegisterDeprecated(string, any, string, string, string) {}\n")
	write("plugins/a/a.go", "package a\nconst (\n\tAType = \"a-scorer\"\n\tOld = \"old-scorer\"\n)\n")
	write("plugins/b/b.go", "package b\nconst name = \"b-filter\"\nconst BType = name\n")
	write("metrics/m.go", "package metrics\nfunc Register(...any) {}\n")
	write(runnerFile, `package runner

import (
	"example.com/picker/metrics"
	"example.com/picker/plugins/a"
	bee "example.com/picker/plugins/b"
	fwk "example.com/picker/reg"
)

func register() {
	metrics.Register(1)
	fwk.Register(a.AType, nil)
	fwk.RegisterDeprecated(a.Old, nil, "v0.9.0", "v0.11.0", a.AType)
	fwk.Register(bee.BType, nil)
	fwk.Register(bee.BType, nil)
	fwk.Register("literal-picker", nil)
}
`)
	got, err := extractRegistrations(root, "example.com/picker/reg")
	if err != nil {
		t.Fatal(err)
	}
	want := []RegisteredType{
		{Type: "a-scorer", Source: "plugins/a/a.go"},
		{Type: "b-filter", Source: "plugins/b/b.go"},
		{Type: "literal-picker", Source: runnerFile},
		{Type: "old-scorer", Source: "plugins/a/a.go", Deprecated: &Deprecation{Since: "v0.9.0", RemovedIn: "v0.11.0", Replacement: "a-scorer"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registrations (-want +got):\n%s", diff)
	}

	write(runnerFile, "package runner\nimport fwk \"example.com/picker/reg\"\nimport \"example.com/picker/plugins/a\"\nfunc r() { fwk.Register(a.Missing, nil) }\n")
	_, err = extractRegistrations(root, "example.com/picker/reg")
	if err == nil || !strings.Contains(err.Error(), "runner.go:4: a.Missing: no string constant Missing in example.com/picker/plugins/a") {
		t.Errorf("a missing constant: got error %v; want one naming the line and the constant", err)
	}
}

// parameterList is testdata/llm-d-router-parameters.yaml.
type parameterList struct {
	Plugins map[string]struct {
		Source     []string `json:"source"`
		Names      []string `json:"names"`
		Deprecated []string `json:"deprecated"`
	} `json:"plugins"`
}

func readParameterList(t *testing.T) parameterList {
	t.Helper()
	raw, err := os.ReadFile("testdata/llm-d-router-parameters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p parameterList
	if err := yaml.UnmarshalStrict(raw, &p); err != nil {
		t.Fatalf("testdata/llm-d-router-parameters.yaml: %v", err)
	}
	return p
}
