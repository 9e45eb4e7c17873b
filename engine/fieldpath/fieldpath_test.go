package fieldpath_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/opendatahub-io/odh-serving/engine/fieldpath"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func sample() *corev1.PodSpec {
	return &corev1.PodSpec{
		NodeSelector: map[string]string{"gpu": "{{ .A }}"},
		Containers: []corev1.Container{{
			Name:  "main",
			Args:  []string{"--model", "{{ .B }}"},
			Env:   []corev1.EnvVar{{Name: "HOME", Value: "/home"}},
			Ports: []corev1.ContainerPort{{ContainerPort: 8000}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				"nvidia.com/gpu": resource.MustParse("1"),
			}},
		}},
	}
}

func TestWalkFieldsNamesKeyedListsByKey(t *testing.T) {
	var paths []string
	err := fieldpath.Walk("spec.template", sample(), fieldpath.Fields, func(p *fieldpath.Path, _ reflect.Value) error {
		paths = append(paths, p.String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"spec.template.containers[name=main].name",
		"spec.template.containers[name=main].args",
		"spec.template.containers[name=main].ports[containerPort=8000].containerPort",
		"spec.template.containers[name=main].env[name=HOME].name",
		"spec.template.containers[name=main].env[name=HOME].value",
		"spec.template.containers[name=main].resources.limits[nvidia.com/gpu]",
		"spec.template.nodeSelector[gpu]",
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

func TestWalkStringsReplacesInPlace(t *testing.T) {
	spec := sample()
	err := fieldpath.Walk("spec", spec, fieldpath.Strings, func(_ *fieldpath.Path, v reflect.Value) error {
		if v.Kind() == reflect.String && strings.HasPrefix(v.String(), "{{") {
			v.SetString("done")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if spec.NodeSelector["gpu"] != "done" || spec.Containers[0].Args[1] != "done" || spec.Containers[0].Args[0] != "--model" {
		t.Errorf("not replaced in place: nodeSelector %v, args %v", spec.NodeSelector, spec.Containers[0].Args)
	}
}
