package cli_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/cli"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli.Main(args, cli.Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// succeeds runs the command line like run and stops the test unless it
// exits 0.
func succeeds(t *testing.T, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := run(t, stdin, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	return stdout, stderr
}

// documents runs the command line like succeeds and splits what it wrote.
func documents(t *testing.T, stdin string, args ...string) []manifest.Document {
	t.Helper()
	out, _ := succeeds(t, stdin, args...)
	docs, err := manifest.Split("out", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestRenderExamples(t *testing.T) {
	out, stderr := succeeds(t, "", "render",
		"-f", "../../examples/gpu/single-node.yaml", "-f", "../../examples/gpu/prefill-decode.yaml", "-f", "../../examples/gpu/data-parallel.yaml")
	if stderr != "" {
		t.Errorf("stderr must stay empty without --explain: %q", stderr)
	}
	golden.Assert(t, "testdata/examples.yaml", []byte(out))
}

func TestRenderFromStdinAsJSON(t *testing.T) {
	svc := golden.Read(t, "../../examples/gpu/single-node.yaml")
	out, _ := succeeds(t, string(svc), "render", "-f", "-", "-o", "json", "--migration-phase", "retired")
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	pools := 0
	for _, it := range list.Items {
		if it["kind"] == "InferencePool" {
			pools++
		}
	}
	if list.Kind != "List" || pools != 1 {
		t.Errorf("kind %q with %d pools; the retired phase has only the v1 pool", list.Kind, pools)
	}
}

func TestRenderExplainGoesToStderr(t *testing.T) {
	out, stderr := succeeds(t, "", "render", "-f", "../../examples/gpu/single-node.yaml", "--explain")
	for _, want := range []string{
		"well-known opendatahub/kserve-config-llm-template (presets/config-llm-template/preset.yaml:",
		"spec.template.containers[name=main].resources.limits[nvidia.com/gpu] <- service",
		"spec.template.containers[name=main].image <- opendatahub/kserve-config-llm-template",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--explain output lacks %q", want)
		}
	}
	if strings.Contains(out, "<-") {
		t.Error("the explanation must not reach stdout")
	}
}

func TestRenderErrorsWriteNothing(t *testing.T) {
	tests := map[string]struct {
		stdin string
		args  []string
		want  string
	}{
		"bad field with its line": {
			stdin: "# a comment\napiVersion: serving.kserve.io/v1alpha1\nkind: LLMInferenceService\nmetadata: {name: x}\nspec:\n  template: {containers: [{name: main, imagee: v}]}\n",
			args:  []string{"render", "-f", "-"},
			want:  "<stdin>:2: LLMInferenceService x: spec.template.containers[0].imagee: Forbidden: unknown field",
		},
		"one bad service of two": {
			stdin: "apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: good}\nspec: {}\n---\napiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: bad}\nspec: {model: {uri: ftp://x}}\n",
			args:  []string{"render", "-f", "-"},
			want:  `<stdin>:6: render LLMInferenceService default/bad: spec.model.uri "ftp://x": unknown storage scheme "ftp"`,
		},
		"unknown phase": {args: []string{"render", "-f", "-", "--migration-phase", "v2"}, want: `unknown migration phase "v2"`},
		"no service":    {stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", args: []string{"render", "-f", "-"}, want: "the input holds no LLMInferenceService"},
		"not a kind render reads": {
			stdin: "apiVersion: v1\nkind: Secret\nmetadata: {name: c}\n", args: []string{"render", "-f", "-"},
			want: "<stdin>:1: Secret c is neither an LLMInferenceService, an LLMInferenceServiceConfig nor a ConfigMap (the tier list tier-to-group-mapping, or one a service names)",
		},
		"scheduler ConfigMap missing": {
			stdin: schedulerConfigService, args: []string{"render", "-f", "-"},
			want: "<stdin>:1: render LLMInferenceService team-a/chat: spec.router.scheduler.config.ref: ConfigMap not found: chat-epp in namespace team-a",
		},
		"scheduler ConfigMap without the key": {
			stdin: schedulerConfigService + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: chat-epp, namespace: team-a}\ndata: {other: x}\n",
			args:  []string{"render", "-f", "-"},
			want:  `<stdin>:1: render LLMInferenceService team-a/chat: spec.router.scheduler.config.ref: ConfigMap team-a/chat-epp has no key "epp"`,
		},
		"bad tier list": {
			stdin: maasService + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: tier-to-group-mapping}\ndata:\n  tiers: '- {name: premium, levl: 1}'\n",
			args:  []string{"render", "-f", "-"},
			want:  `<stdin>:11: ConfigMap tier-to-group-mapping: key tiers: not a YAML list of {name, displayName, description, level, groups}: error unmarshaling JSON: while decoding JSON: json: unknown field "levl"`,
		},
		"tier list without the key tiers": {
			stdin: maasService + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: tier-to-group-mapping}\ndata: {tier: '- {name: premium}'}\n",
			args:  []string{"render", "-f", "-"},
			want:  "<stdin>:11: ConfigMap tier-to-group-mapping: no key tiers",
		},
		"unknown tier": {
			stdin: strings.Replace(maasService, "premium", "gold", 1) + "---\n" + maasTiers,
			args:  []string{"render", "-f", "-"},
			want:  `<stdin>:1: LLMInferenceService default/chat: annotation alpha.maas.opendatahub.io/tiers: "[\"gold\"]" names unknown tier "gold"; the tiers are "free", "premium"`,
		},
		"missing file": {args: []string{"render", "-f", "does-not-exist.yaml"}, want: "read input: open does-not-exist.yaml"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			failsQuietly(t, tc.stdin, tc.want, tc.args...)
		})
	}
}

// maasService is published to the premium tier; maasTiers is the tier
// ConfigMap, free and premium.
const (
	maasService = "apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata:\n  name: chat\n  annotations:\n" +
		"    alpha.maas.opendatahub.io/tiers: '[\"premium\"]'\nspec:\n  model: {uri: hf://Qwen/Qwen3-0.6B}\n  baseRefs: [{name: kserve-config-llm-cpu-simulator}]\n"
	maasTiers = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tier-to-group-mapping}\ndata:\n  tiers: |\n" +
		"    - {name: free, level: 0, groups: [system:authenticated]}\n    - {name: premium, level: 1, groups: [premium-users]}\n"
)

// schedulerConfigService reads its endpoint picker's configuration from
// the ConfigMap chat-epp; schedulerConfigText is such a configuration, and
// schedulerConfigJSON the same as the endpoint picker gets it.
const (
	schedulerConfigService = "apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: chat, namespace: team-a}\nspec:\n" +
		"  model: {uri: hf://Qwen/Qwen3-0.6B}\n  baseRefs: [{name: kserve-config-llm-cpu-simulator}]\n" +
		"  router:\n    route: {}\n    gateway: {}\n    scheduler:\n      config:\n        ref: {name: chat-epp, key: epp}\n"
	schedulerConfigText = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: queue-scorer\n"
	schedulerConfigJSON = `{"apiVersion":"inference.networking.x-k8s.io/v1alpha1","kind":"EndpointPickerConfig","plugins":[{"type":"queue-scorer"}]}`
)

// spec.router.scheduler.config.ref reads the endpoint picker's
// configuration from a ConfigMap of the input, as the controller reads it
// from the cluster: in the service's namespace (a ConfigMap without one is
// in --namespace), or for a config-scheduler- name, in the system
// namespace; render and post-render give the same --config-text, and no
// "not acted on" warning.
func TestSchedulerConfigFromConfigMap(t *testing.T) {
	configMap := func(meta, key string) string {
		return "---\napiVersion: v1\nkind: ConfigMap\nmetadata: " + meta + "\ndata:\n  " + key + ": |\n" +
			"    " + strings.ReplaceAll(strings.TrimSuffix(schedulerConfigText, "\n"), "\n", "\n    ") + "\n"
	}
	shared := strings.Replace(schedulerConfigService, "{name: chat-epp, key: epp}", "{name: config-scheduler-queue, key: profile}", 1)
	for name, tc := range map[string]struct{ input, command string }{
		"render, namespaced":                 {schedulerConfigService + configMap("{name: chat-epp, namespace: team-a}", "epp"), "render"},
		"render, the release namespace":      {schedulerConfigService + configMap("{name: chat-epp}", "epp"), "render"},
		"render, shared from the system one": {shared + configMap("{name: config-scheduler-queue, namespace: opendatahub}", "profile"), "render"},
		"post-render":                        {schedulerConfigService + configMap("{name: chat-epp}", "epp"), "post-render"},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{tc.command, "--namespace", "team-a"}
			if tc.command == "render" {
				args = append(args, "-f", "-")
			} else {
				args = append(args, "--mode", "static")
			}
			out, stderr := succeeds(t, tc.input, args...)
			if want := "- --config-text\n        - '" + schedulerConfigJSON + "'\n"; !strings.Contains(out, want) {
				t.Errorf("the endpoint picker lacks the ConfigMap's configuration %q:\n%s", want, out)
			}
			if strings.Contains(stderr, "config.ref") {
				t.Errorf("stderr warns about config.ref, which is now acted on: %s", stderr)
			}
		})
	}
}

// render with the tier ConfigMap in its input renders a published
// service's model-user Role and its tiers' RoleBindings, as the
// controller's --maas does; without it, none.
func TestRenderMaaSAccess(t *testing.T) {
	out, _ := succeeds(t, maasService+"---\n"+maasTiers, "render", "-f", "-", "--tier-namespace-prefix", "acme-tier-")
	for _, want := range []string{"kind: Role\nmetadata:\n  labels:\n    app.kubernetes.io/component: llminferenceservice-model-access",
		"name: chat-model-user\n", "name: chat-model-user-premium\n", "name: system:serviceaccounts:acme-tier-premium\n", "  - post\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if strings.Contains(out, "chat-model-user-free") {
		t.Error("the free tier is bound to a service published to premium only")
	}
	code, out, stderr := run(t, maasService, "render", "-f", "-")
	if code != 0 || strings.Contains(out, "model-user") {
		t.Errorf("without the tier ConfigMap: exit %d, model-user objects rendered: %v (%s)", code, strings.Contains(out, "model-user"), stderr)
	}
}

func TestRenderWithPresetDirectory(t *testing.T) {
	svc := `apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: pinned, namespace: team-a}
spec:
  model: {uri: "pvc://models/m"}
  baseRefs: [{name: team-h100}]
`
	out, _ := succeeds(t, svc, "render", "-f", "-", "--presets", "testdata/presets")
	for _, want := range []string{"nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3", "image: registry.example/vllm:platform"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q: the team preset and the replaced system preset must both apply", want)
		}
	}
	if strings.Contains(out, "vllm/vllm-openai") {
		t.Error("the built-in single-node preset must be replaced by the one from --presets")
	}
}

func TestPresetsCommands(t *testing.T) {
	out, _ := succeeds(t, "", "presets", "list", "--presets", "testdata/presets")
	for _, want := range []string{
		"kserve-config-llm-template", "built-in", "replaced by testdata/presets/team.yaml:",
		"team-h100", "team-a",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}

	code, out, stderr := run(t, "", "presets", "show", "kserve-config-llm-scheduler")
	if code != 0 || !strings.Contains(out, "kind: LLMInferenceServiceConfig") || !strings.Contains(out, "--config-text") {
		t.Errorf("show: exit %d, stderr %q, output:\n%s", code, stderr, out)
	}
	if code, _, stderr = run(t, "", "presets", "show", "nope"); code == 0 || !strings.Contains(stderr, `no preset named "nope"`) {
		t.Errorf("show of a missing preset: exit %d, stderr %q", code, stderr)
	}

	code, _, stderr = run(t, "", "presets", "lint", "testdata/presets/team.yaml")
	if code != 0 || !strings.Contains(stderr, "2 preset(s) ok") {
		t.Errorf("lint of good presets: exit %d, stderr %q", code, stderr)
	}
	code, out, _ = run(t, "", "presets", "lint", "../presetlint/testdata/broken/route-weight.yaml")
	if code == 0 || !strings.Contains(out, "route-weight.yaml:2: preset config-llm-router-route in a single-node service renders an invalid HTTPRoute") {
		t.Errorf("lint of a broken preset: exit %d, output %q", code, out)
	}
}

func TestPostRender(t *testing.T) {
	stream := "# Source: chart/templates/svc.yaml\napiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: s}\nspec:\n  baseRefs: [{name: kserve-config-llm-cpu-simulator}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep-me}\n"

	code, out, stderr := run(t, stream, "post-render")
	if code != 0 || out != stream {
		t.Errorf("controller mode must pass the stream through untouched: exit %d, stderr %q", code, stderr)
	}

	code, out, stderr = run(t, stream, "post-render", "--mode", "static", "-n", "rel-ns")
	if code != 0 {
		t.Fatalf("static: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"name: keep-me", "kind: LLMInferenceService\n", "name: s-kserve\n  namespace: rel-ns", "kind: Deployment"} {
		if !strings.Contains(out, want) {
			t.Errorf("static output lacks %q", want)
		}
	}

	code, out, stderr = run(t, stream, "post-render", "--mode", "static")
	if code == 0 || out != "" || !strings.Contains(stderr, "<stdin>:2: LLMInferenceService s has no namespace; pass the release namespace with --namespace") {
		t.Errorf("a service without a namespace: exit %d, stdout %d bytes, stderr %q", code, len(out), stderr)
	}
	if code, _, stderr = run(t, stream, "post-render", "--mode", "dynamic"); code == 0 || !strings.Contains(stderr, `unknown mode "dynamic"`) {
		t.Errorf("unknown mode: exit %d, stderr %q", code, stderr)
	}
}
