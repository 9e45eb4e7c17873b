package chart

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/engine"
)

const mirror = "mirror.example.com:5000/odh"

// TestMirror installs nothing: it renders the chart behind a mirror and
// checks that the controller and the helm test pod pull from it with the
// pull secrets, and that the controller is told to move the presets' images
// (--image-registry) and the storage initializer's override.
func TestMirror(t *testing.T) {
	const digest = "sha256:0f6b9c4a6a1f0d4c3b2a19080706050403020100f0e0d0c0b0a0908070605040"
	_, objs := render(t, templateArgs(chartDir, "",
		"--set", "imageRegistry="+mirror,
		"--set", "imagePullSecrets[0].name=mirror-pull",
		"--set", "controller.imagePullSecrets[0].name=controller-pull",
		"--set", "controller.image.digest="+digest,
		"--set", "images.storageInitializer=kserve/storage-initializer:v0.16.0")...)

	template, _, _ := unstructured.NestedMap(one(t, objs, "Deployment", "odh-serving-controller").Object, "spec", "template")
	controller := podFrom(t, template)
	if got, want := controller.Spec.Containers[0].Image, mirror+"/opendatahub/odh-serving@"+digest; got != want {
		t.Errorf("controller image %s, want %s", got, want)
	}
	args := controller.Spec.Containers[0].Args
	for _, want := range []string{"--image-registry=" + mirror, "--image=storageInitializer=kserve/storage-initializer:v0.16.0"} {
		if !slices.Contains(args, want) {
			t.Errorf("controller args lack %s: %v", want, args)
		}
	}
	if got := secretNames(controller.Spec.ImagePullSecrets); !slices.Equal(got, []string{"mirror-pull", "controller-pull"}) {
		t.Errorf("controller pull secrets %v, want [mirror-pull controller-pull]", got)
	}

	test := podFrom(t, one(t, objs, "Pod", "odh-serving-test").Object)
	if got, want := test.Spec.Containers[0].Image, mirror+"/curl/curl:8.11.1"; got != want {
		t.Errorf("helm test image %s, want %s", got, want)
	}
	if got := secretNames(test.Spec.ImagePullSecrets); !slices.Equal(got, []string{"mirror-pull"}) {
		t.Errorf("helm test pull secrets %v, want [mirror-pull]", got)
	}
}

// TestMirrorMatchesEngine checks that the chart moves an image to the mirror
// exactly as the controller's --image-registry does (engine.MirrorImage),
// for each form a reference takes.
func TestMirrorMatchesEngine(t *testing.T) {
	for _, ref := range []string{
		"quay.io/curl/curl:8.11.1",
		"vllm/vllm-openai:v0.11.0",
		"busybox",
		"localhost/dev/curl:1",
		"registry:5000/team/curl@sha256:0123abcd",
	} {
		_, objs := render(t, templateArgs(chartDir, "", "--set", "imageRegistry="+mirror, "--set", "tests.image="+ref)...)
		test := podFrom(t, one(t, objs, "Pod", "odh-serving-test").Object)
		if got, want := test.Spec.Containers[0].Image, engine.MirrorImage(ref, mirror); got != want {
			t.Errorf("%s: the chart made %s, the engine %s", ref, got, want)
		}
	}
}

func secretNames(refs []corev1.LocalObjectReference) []string {
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		names = append(names, r.Name)
	}
	return names
}
