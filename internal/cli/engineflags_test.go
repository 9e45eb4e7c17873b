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

	code, out, stderr = run(t, "", "render", "-f", "../../examples/gpu/prefill-decode.yaml", "--image", "vlm="+image)
	if code == 0 || out != "" {
		t.Fatalf("an unknown image key must fail with nothing on stdout; exit %d", code)
	}
	if want := `unknown image key "vlm"`; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q does not contain %q", stderr, want)
	}
}
