package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestDifference(t *testing.T) {
	container := func(name, image string, extra map[string]any) map[string]any {
		c := map[string]any{"name": name, "image": image}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	for name, tc := range map[string]struct {
		desired, live any
		want          string
	}{
		"equal scalars":           {int64(1), int64(1), ""},
		"numbers of other types":  {int64(8000), float64(8000), ""},
		"changed scalar":          {"a", "b", "x"},
		"defaulted map keys":      {map[string]any{"a": "1"}, map[string]any{"a": "1", "b": "2"}, ""},
		"missing key":             {map[string]any{"a": "1"}, map[string]any{"b": "2"}, "x.a"},
		"empty desired map":       {map[string]any{}, map[string]any{"type": "RollingUpdate"}, ""},
		"empty desired list":      {[]any{}, []any{"x"}, ""},
		"null desired":            {nil, "anything", ""},
		"scalar list reordered":   {[]any{"a", "b"}, []any{"b", "a"}, "x[0]"},
		"scalar list longer live": {[]any{"a"}, []any{"a", "b"}, "x"},
		"objects with defaults":   {[]any{container("main", "v", nil)}, []any{container("main", "v", map[string]any{"imagePullPolicy": "IfNotPresent"})}, ""},
		"objects with others between": {
			[]any{container("a", "1", nil), container("c", "3", nil)},
			[]any{container("a", "1", nil), container("b", "2", nil), container("c", "3", nil)}, "",
		},
		"object changed":          {[]any{container("main", "v1", nil)}, []any{container("main", "v2", nil)}, "x[0].image"},
		"object missing":          {[]any{container("a", "1", nil), container("b", "2", nil)}, []any{container("a", "1", nil)}, "x[1]"},
		"objects out of order":    {[]any{container("a", "1", nil), container("b", "2", nil)}, []any{container("b", "2", nil), container("a", "1", nil)}, "x[1].image"},
		"map where live has none": {map[string]any{"a": "1"}, nil, "x"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := difference(tc.desired, tc.live, "x"); got != tc.want {
				t.Errorf("difference = %q, want %q", got, tc.want)
			}
		})
	}
}

func testService() *v1alpha2.LLMInferenceService {
	return &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", UID: "uid-1"}}
}

func desiredDeployment(t *testing.T, image string) *unstructured.Unstructured {
	t.Helper()
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-kserve", Labels: map[string]string{"app": "x"}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: image}},
		}}},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	return &unstructured.Unstructured{Object: m}
}

func TestClaimAndUpToDate(t *testing.T) {
	svc := testService()
	k := kind{gvk: gvkDeployment}
	a, b, c := desiredDeployment(t, "v1"), desiredDeployment(t, "v1"), desiredDeployment(t, "v2")
	for _, u := range []*unstructured.Unstructured{a, b, c} {
		if err := claim(u, svc, k); err != nil {
			t.Fatal(err)
		}
	}
	hash := func(u *unstructured.Unstructured) string { return u.GetAnnotations()[AnnotationAppliedHash] }
	if hash(a) == "" || hash(a) != hash(b) {
		t.Errorf("the same object hashes differently: %q %q", hash(a), hash(b))
	}
	if hash(a) == hash(c) {
		t.Error("a changed image keeps the hash")
	}

	// The live object as the API server returns it: defaulted, with the
	// hash and the owner reference.
	live := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(a.Object, live); err != nil {
		t.Fatal(err)
	}
	live.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	live.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	live.Annotations["deployment.kubernetes.io/revision"] = "1"
	if !controls(svc, live, k) {
		t.Fatal("the claimed object is not controlled by the service")
	}
	if diff, err := upToDate(a, live); err != nil || diff != "" {
		t.Errorf("upToDate = %q, %v; want up to date", diff, err)
	}
	live.Labels["app"] = "edited"
	if diff, _ := upToDate(a, live); diff != "metadata.labels.app" {
		t.Errorf("a hand edit: upToDate = %q, want metadata.labels.app", diff)
	}
	if diff, _ := upToDate(c, live); diff == "" {
		t.Error("a new desired state is up to date")
	}
	other := testService()
	other.UID = "uid-2"
	if controls(other, live, k) {
		t.Error("another service controls the object")
	}
}

func TestClaimClusterScoped(t *testing.T) {
	svc := testService()
	k := kind{gvk: gvkClusterRoleBinding, clusterScoped: true}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "ns-svc-epp-auth-rb"}}}
	if err := claim(u, svc, k); err != nil {
		t.Fatal(err)
	}
	if len(u.GetOwnerReferences()) != 0 {
		t.Error("a cluster-scoped child got an owner reference")
	}
	if got := u.GetAnnotations(); got[AnnotationOwner] != "ns/svc" || got[AnnotationOwnerUID] != "uid-1" {
		t.Errorf("annotations %v", got)
	}
	if !controls(svc, u, k) {
		t.Error("not controlled")
	}
	if reqs := forClusterScoped(t.Context(), u); len(reqs) != 1 || reqs[0].Namespace != "ns" || reqs[0].Name != "svc" {
		t.Errorf("mapped to %v", reqs)
	}
}

// TestVerifiedChildren: a child found up to date is not compared again
// while neither the live object (UID, resourceVersion) nor the desired one
// (its hash) changes; any change, or its deletion, brings the comparison
// back.
func TestVerifiedChildren(t *testing.T) {
	var v verifiedChildren
	id := verifiedID{gvk: gvkService, key: client.ObjectKey{Namespace: "ns", Name: "llm"}}
	live := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm", UID: "u1", ResourceVersion: "7"}}
	if v.holds(id, live, "h1") {
		t.Fatal("an empty memo holds a child")
	}
	v.record(id, live, "h1")
	if !v.holds(id, live, "h1") {
		t.Error("a verified child is compared again though nothing changed")
	}
	for name, change := range map[string]func() (*corev1.Service, string){
		"desired changed":       func() (*corev1.Service, string) { return live, "h2" },
		"edited by hand":        func() (*corev1.Service, string) { l := live.DeepCopy(); l.ResourceVersion = "8"; return l, "h1" },
		"deleted and recreated": func() (*corev1.Service, string) { l := live.DeepCopy(); l.UID = "u2"; return l, "h1" },
	} {
		if l, h := change(); v.holds(id, l, h) {
			t.Errorf("%s: the memo still holds the child", name)
		}
	}
	v.forget(id)
	if v.holds(id, live, "h1") {
		t.Error("a deleted child is still held")
	}
}
