package cli_test

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// render, post-render and controller take the same engine flags, with the
// same defaults and help: every line engine.Options.AddFlags gives is in
// each command's help.
func TestEngineFlagsAreTheSameEverywhere(t *testing.T) {
	fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
	(&engine.Options{}).AddFlags(fs)
	lines := strings.Split(strings.TrimRight(fs.FlagUsages(), "\n"), "\n")
	if len(lines) < 10 {
		t.Fatalf("engine flags: %d lines:\n%s", len(lines), fs.FlagUsages())
	}
	for _, cmd := range []string{"render", "post-render", "controller"} {
		out, _ := succeeds(t, "", cmd, "--help")
		for _, line := range lines {
			// The help pads every flag of a command to one column.
			flag, usage, _ := strings.Cut(strings.TrimSpace(line), "   ")
			if !strings.Contains(out, flag) || !strings.Contains(out, strings.TrimSpace(usage)) {
				t.Errorf("%s --help lacks %q", cmd, strings.TrimSpace(line))
			}
		}
		if got, want := strings.Contains(out, "--migration-phase"), cmd != "controller"; got != want {
			t.Errorf("%s --help lists --migration-phase: %v, want %v (the controller decides the phase)", cmd, got, want)
		}
	}
}

// The storage initializer's image is the images.yaml key
// storageInitializer, so --image sets it, as the chart's
// images.storageInitializer does for the controller.
func TestRenderStorageInitializerImage(t *testing.T) {
	const image = "registry.example.com/kserve/storage-initializer:v9"
	out, _ := succeeds(t, "", "render", "-f", "../../examples/gpu/prefill-decode.yaml", "--image", "storageInitializer="+image)
	if !strings.Contains(out, "image: "+image) {
		t.Error("the storage initializer image from --image did not reach the init container")
	}
}

// A bad value of an engine flag is an error that names the flag.
func TestEngineFlagErrorsNameTheFlag(t *testing.T) {
	for _, args := range [][]string{
		{"--cert-mode", "vault"}, {"--migration-phase", "beta"}, {"--image-registry", "https://mirror.example.com"},
	} {
		code, out, stderr := run(t, "", append([]string{"render", "-f", "../../examples/gpu/prefill-decode.yaml"}, args...)...)
		if code == 0 || out != "" || !strings.Contains(stderr, args[0]) {
			t.Errorf("%v: exit %d, stderr %q; want a failure naming %s and nothing on stdout", args, code, stderr, args[0])
		}
	}
}

func TestRenderImageAndGatewayFlags(t *testing.T) {
	const image = "registry.example.com/vllm/vllm-openai:v9.9.9"
	out, _ := succeeds(t, "", "render", "-f", "../../examples/gpu/prefill-decode.yaml",
		"--image", "vllm="+image, "--internal-gateway-name", "kserve-internal-gateway")
	if n := strings.Count(out, "image: "+image); n < 2 {
		t.Errorf("the overridden vLLM image appears %d times; want it in the decode and prefill containers", n)
	}
	if !strings.Contains(out, "name: kserve-internal-gateway") {
		t.Error("the managed route does not attach to the internal gateway")
	}

}

// A team preset may name an image key the shipped presets do not have; the
// flag adds it, and without it the render fails naming the key.
func TestRenderExtraImageKey(t *testing.T) {
	const stream = `apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceServiceConfig
metadata:
  name: rocm
  namespace: team-a
spec:
  template:
    containers:
    - name: main
      image: "{{ .GlobalConfig.Images.vllmRocm }}"
---
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata:
  name: chat
  namespace: team-a
spec:
  baseRefs: [{name: rocm}]
  model:
    uri: hf://Qwen/Qwen2.5-7B-Instruct
`
	const image = "registry.example.com/vllm/vllm-rocm:v1"
	out, _ := succeeds(t, stream, "render", "-f", "-", "--image", "vllmRocm="+image)
	if !strings.Contains(out, "image: "+image) {
		t.Errorf("the added image key did not reach the container")
	}
	code, out, stderr := run(t, stream, "render", "-f", "-")
	if code == 0 || out != "" {
		t.Fatalf("a preset naming an unset image key must fail with nothing on stdout; exit %d", code)
	}
	if !strings.Contains(stderr, "vllmRocm") {
		t.Errorf("stderr %q does not name the image key", stderr)
	}
}

// The chart's controller Deployment passes every engine flag, so each
// engine option can be set from the chart's values too.
func TestChartPassesEveryEngineFlag(t *testing.T) {
	deployment := golden.Read(t, "../../charts/odh-serving/templates/deployment.yaml")
	fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
	(&engine.Options{}).AddFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		// A boolean flag may be passed bare, under the value that turns it on.
		bare := f.Value.Type() == "bool" && strings.Contains(string(deployment), "- --"+f.Name+"\n")
		if !bare && !strings.Contains(string(deployment), "- --"+f.Name+"=") {
			t.Errorf("charts/odh-serving/templates/deployment.yaml does not pass --%s", f.Name)
		}
	})
}
