package controller

import (
	"reflect"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// decoded returns a copy of s in memory of its own, as a decoder makes it.
func decoded(s string) string { return string([]byte(s)) }

func deployment(name string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: decoded(name), Namespace: decoded("ns"),
			Labels:          map[string]string{decoded("app.kubernetes.io/part-of"): decoded("llminferenceservice")},
			Annotations:     map[string]string{decoded(AnnotationAppliedHash): decoded("0123456789ab")},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "odh-serving"}},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: decoded("serving.kserve.io/v1alpha2"), Kind: decoded("LLMInferenceService"), Name: decoded(name)}},
		},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: decoded("main"), Image: decoded("ghcr.io/llm-d/llm-d-inference-sim:v0.5.1"), Args: []string{decoded("--port=8000")},
			Env:       []corev1.EnvVar{{Name: decoded("POD_NAME"), ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: decoded("metadata.name")}}}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceName(decoded("cpu")): resource.MustParse("1")}},
			Ports:     []corev1.ContainerPort{{Name: decoded("http"), ContainerPort: 8000, Protocol: corev1.Protocol(decoded("TCP"))}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: decoded("/health"), Port: intstr.FromString(decoded("http")),
			}}},
		}}}}},
	}
}

// same reports whether a and b share their bytes: what interning promises.
func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) } //nolint:gosec // reads the pointers only, to see the interning

func TestCacheTransform(t *testing.T) {
	a, b := deployment("a"), deployment("b")
	a.Spec.Template.Spec.Containers[0].Args = append(make([]string, 0, 8), a.Spec.Template.Spec.Containers[0].Args...)
	want := a.DeepCopy()
	want.ManagedFields = nil
	for _, d := range []*appsv1.Deployment{a, b} {
		if _, err := cacheTransform(d); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("the transform changed more than the managed fields:\n got %+v\nwant %+v", a, want)
	}
	ca, cb := &a.Spec.Template.Spec.Containers[0], &b.Spec.Template.Spec.Containers[0]
	if cap(ca.Args) != len(ca.Args) {
		t.Errorf("arguments: capacity %d after the transform, want their length %d", cap(ca.Args), len(ca.Args))
	}
	for what, pair := range map[string][2]string{
		"namespace":       {a.Namespace, b.Namespace},
		"image":           {ca.Image, cb.Image},
		"argument":        {ca.Args[0], cb.Args[0]},
		"env field path":  {ca.Env[0].ValueFrom.FieldRef.FieldPath, cb.Env[0].ValueFrom.FieldRef.FieldPath},
		"probe port":      {ca.ReadinessProbe.HTTPGet.Port.StrVal, cb.ReadinessProbe.HTTPGet.Port.StrVal},
		"protocol":        {string(ca.Ports[0].Protocol), string(cb.Ports[0].Protocol)},
		"owner kind":      {a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
		"label value":     {a.Labels["app.kubernetes.io/part-of"], b.Labels["app.kubernetes.io/part-of"]},
		"annotation":      {a.Annotations[AnnotationAppliedHash], b.Annotations[AnnotationAppliedHash]},
		"label key":       {onlyKey(a.Labels), onlyKey(b.Labels)},
		"resource name":   {string(onlyKey(ca.Resources.Limits)), string(onlyKey(cb.Resources.Limits))},
		"owner reference": {a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("%s %q: two copies after the transform", what, pair[0])
		}
	}
}

func onlyKey[K comparable, V any](m map[K]V) K {
	for k := range m {
		return k
	}
	var zero K
	return zero
}

func TestCacheTransformUnstructured(t *testing.T) {
	obj := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			decoded("apiVersion"): decoded("monitoring.coreos.com/v1"),
			decoded("kind"):       decoded("PodMonitor"),
			decoded("metadata"):   map[string]any{decoded("name"): decoded("x")},
			decoded("spec"): map[string]any{decoded("podMetricsEndpoints"): []any{
				map[string]any{decoded("port"): decoded("metrics"), decoded("interval"): int64(30)},
			}},
		}}
	}
	a, b := obj(), obj()
	want := a.DeepCopy()
	for _, u := range []*unstructured.Unstructured{a, b} {
		if _, err := cacheTransform(u); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("the transform changed the object:\n got %v\nwant %v", a, want)
	}
	port := func(u *unstructured.Unstructured) string {
		eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "podMetricsEndpoints")
		return eps[0].(map[string]any)["port"].(string)
	}
	if !same(port(a), port(b)) || !same(a.GetKind(), b.GetKind()) {
		t.Error("equal strings of two unstructured objects not shared after the transform")
	}
}
