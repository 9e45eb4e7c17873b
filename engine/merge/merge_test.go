package merge_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/merge"
	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func pod(c ...corev1.Container) v1alpha2.WorkloadSpec {
	return v1alpha2.WorkloadSpec{Template: &corev1.PodSpec{Containers: c}}
}

func TestSpecs(t *testing.T) {
	preset := &v1alpha2.LLMInferenceServiceSpec{
		WorkloadSpec: pod(corev1.Container{
			Name:    "main",
			Image:   "vllm:1",
			Command: []string{"/bin/bash", "-c", "exec vllm serve \"$@\"", "vllm-serve"},
			Args:    []string{"--from-preset"},
			Env:     []corev1.EnvVar{{Name: "HOME", Value: "/home"}, {Name: "LOG", Value: "INFO"}},
		}),
	}
	preset.Replicas = ptr.To[int32](1)
	// wantEnv checks the main container's environment.
	wantEnv := func(want []corev1.EnvVar) func(t *testing.T, got *v1alpha2.LLMInferenceServiceSpec) {
		return func(t *testing.T, got *v1alpha2.LLMInferenceServiceSpec) {
			t.Helper()
			if diff := cmp.Diff(want, got.Template.Containers[0].Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		}
	}
	tests := map[string]struct {
		service *v1alpha2.LLMInferenceServiceSpec
		check   func(t *testing.T, got *v1alpha2.LLMInferenceServiceSpec)
	}{
		"a template with no containers keeps the preset's containers": {
			service: &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Template: &corev1.PodSpec{}}},
			check: func(t *testing.T, got *v1alpha2.LLMInferenceServiceSpec) {
				t.Helper()
				if len(got.Template.Containers) != 1 || got.Template.Containers[0].Image != "vllm:1" {
					t.Errorf("containers = %+v, want the preset's", got.Template.Containers)
				}
			},
		},
		"user args replace args and keep the launch command": {
			service: &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: pod(corev1.Container{Name: "main", Args: []string{"--max-model-len", "4096"}})},
			check: func(t *testing.T, got *v1alpha2.LLMInferenceServiceSpec) {
				t.Helper()
				c := got.Template.Containers[0]
				if diff := cmp.Diff([]string{"--max-model-len", "4096"}, c.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(preset.Template.Containers[0].Command, c.Command); diff != "" {
					t.Errorf("the launch command must survive user args (-want +got):\n%s", diff)
				}
			},
		},
		"env merges by name, later value wins": {
			service: &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: pod(corev1.Container{Name: "main", Env: []corev1.EnvVar{{Name: "LOG", Value: "DEBUG"}, {Name: "NEW", Value: "1"}}})},
			check:   wantEnv([]corev1.EnvVar{{Name: "HOME", Value: "/home"}, {Name: "LOG", Value: "DEBUG"}, {Name: "NEW", Value: "1"}}),
		},
		"a second container is added, not merged": {
			service: &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: pod(corev1.Container{Name: "sidecar", Image: "proxy"})},
			check: func(t *testing.T, got *v1alpha2.LLMInferenceServiceSpec) {
				t.Helper()
				if n := len(got.Template.Containers); n != 2 {
					t.Errorf("%d containers, want main and sidecar", n)
				}
			},
		},
		"inherited list items keep their place; new ones follow": {
			service: &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: pod(corev1.Container{Name: "main", Env: []corev1.EnvVar{{Name: "NEW", Value: "$(HOME)/x"}}})},
			check:   wantEnv([]corev1.EnvVar{{Name: "HOME", Value: "/home"}, {Name: "LOG", Value: "INFO"}, {Name: "NEW", Value: "$(HOME)/x"}}),
		},
		"the preset's env vars listed in another order": {
			service: &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: pod(corev1.Container{Name: "main", Env: []corev1.EnvVar{{Name: "LOG", Value: "DEBUG"}, {Name: "HOME", Value: "/root"}}})},
			check:   wantEnv([]corev1.EnvVar{{Name: "HOME", Value: "/root"}, {Name: "LOG", Value: "DEBUG"}}),
		},
		"zero replicas is a value, nil is not": {
			service: &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Replicas: ptr.To[int32](0)}},
			check: func(t *testing.T, got *v1alpha2.LLMInferenceServiceSpec) {
				t.Helper()
				if got.Replicas == nil || *got.Replicas != 0 {
					t.Errorf("replicas = %v, want 0", got.Replicas)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, prov, err := merge.Specs([]merge.Layer{{Name: "preset", Spec: preset}, {Name: "service", Spec: tc.service}})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
			if len(prov.Set) != 2 {
				t.Errorf("provenance has %d layers, want 2", len(prov.Set))
			}
		})
	}
}

func TestProvenanceNamesTheWinner(t *testing.T) {
	preset := &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: pod(corev1.Container{Name: "main", Image: "vllm:1", Args: []string{"a"}})}
	service := &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: pod(corev1.Container{Name: "main", Args: []string{"b"}})}
	_, prov, err := merge.Specs([]merge.Layer{{Name: "ns/preset", Spec: preset}, {Name: "service", Spec: service}})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"spec.template.containers[name=main].image":   "ns/preset",
		"spec.template.containers[name=main].args":    "service",
		"spec.template.containers[name=main].args[0]": "service", // inside a list replaced whole
	} {
		if got := prov.Origin(path); got != want {
			t.Errorf("Origin(%s) = %q, want %q", path, got, want)
		}
	}
}
