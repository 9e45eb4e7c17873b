package build

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestLoRAVolumeNameIsValidAndDistinct(t *testing.T) {
	if got := loraVolumeName("sql-v1"); got != "lora-pvc-sql-v1" {
		t.Errorf("a valid name must keep KServe's volume name lora-pvc-sql-v1, got %q", got)
	}
	names := []string{"acme/support.r16", "acme-support-r16", "Qwen/Qwen2.5-7B", "///", strings.Repeat("x.", 50), "a_b", "a-b"}
	seen := map[string]string{}
	for _, n := range names {
		v := loraVolumeName(n)
		if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
			t.Errorf("adapter %q: volume name %q is not a DNS label: %v", n, v, errs)
		}
		if other, dup := seen[v]; dup {
			t.Errorf("adapters %q and %q share the volume name %q", other, n, v)
		}
		seen[v] = n
	}
}

func TestLoRADirStaysUnderTheRoot(t *testing.T) {
	for name, want := range map[string]string{
		"sql": "sql", "org/adapter.v1": "org-adapter.v1", "..": "adapter", ".": "adapter", "../../etc": "..-..-etc", "a b": "a-b",
	} {
		if got := loraDir(name); got != want {
			t.Errorf("loraDir(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestEvalsFindsOnlyEval(t *testing.T) {
	for script, want := range map[string]bool{
		`eval "vllm serve $@"`:               true,
		"set -e; eval \"$CMD\"":              true,
		"exec vllm serve /mnt/models \"$@\"": false,
		"--retrieval-eval x":                 false,
	} {
		c := corev1.Container{Name: MainContainer, Command: []string{"/bin/bash", "-c", script}}
		if got := evals(&c); got != want {
			t.Errorf("evals(%q) = %v, want %v", script, got, want)
		}
	}
}
