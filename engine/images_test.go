package engine_test

import (
	"testing"

	"github.com/opendatahub-io/odh-serving/engine"
)

func TestMirrorImage(t *testing.T) {
	const mirror = "mirror.example.com:5000/odh"
	for ref, want := range map[string]string{
		"ghcr.io/llm-d/llm-d-inference-sim:v0.10.2":  mirror + "/llm-d/llm-d-inference-sim:v0.10.2",
		"vllm/vllm-openai:v0.11.0":                   mirror + "/vllm/vllm-openai:v0.11.0",
		"busybox":                                    mirror + "/library/busybox",
		"localhost/dev/odh-serving:0.2.0":            mirror + "/dev/odh-serving:0.2.0",
		"registry:5000/team/engine@sha256:0123abcd":  mirror + "/team/engine@sha256:0123abcd",
		"quay.io/opendatahub/odh-serving:0.2.0":      mirror + "/opendatahub/odh-serving:0.2.0",
		"docker.io/kserve/storage-initializer:v0.15": mirror + "/kserve/storage-initializer:v0.15",
	} {
		if got := engine.MirrorImage(ref, mirror); got != want {
			t.Errorf("MirrorImage(%q) = %q, want %q", ref, got, want)
		}
	}
	if got := engine.MirrorImage("vllm/vllm-openai:v1", ""); got != "vllm/vllm-openai:v1" {
		t.Errorf("no registry: got %q, want the reference unchanged", got)
	}
}

func TestCheckImageRegistry(t *testing.T) {
	for registry, ok := range map[string]bool{
		"":                            true,
		"mirror.example.com":          true,
		"mirror.example.com:5000/odh": true,
		"https://mirror.example.com":  false,
		"mirror.example.com/":         false,
		"mirror example":              false,
		"mirror@sha256":               false,
	} {
		if err := engine.CheckImageRegistry(registry); (err == nil) != ok {
			t.Errorf("CheckImageRegistry(%q) = %v, want ok=%v", registry, err, ok)
		}
	}
}
