package cli_test

import (
	"strings"
	"testing"
)

func TestRenderImageAndGatewayFlags(t *testing.T) {
	const image = "registry.example.com/vllm/vllm-openai:v9.9.9"
	code, out, stderr := run(t, "", "render", "-f", "../../examples/gpu/prefill-decode.yaml",
		"--image", "vllm="+image, "--internal-gateway-name", "kserve-internal-gateway")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
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
	code, out, stderr := run(t, stream, "render", "-f", "-", "--image", "vllmRocm="+image)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "image: "+image) {
		t.Errorf("the added image key did not reach the container")
	}
	code, out, stderr = run(t, stream, "render", "-f", "-")
	if code == 0 || out != "" {
		t.Fatalf("a preset naming an unset image key must fail with nothing on stdout; exit %d", code)
	}
	if !strings.Contains(stderr, "vllmRocm") {
		t.Errorf("stderr %q does not name the image key", stderr)
	}
}
