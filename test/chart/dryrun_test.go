package chart

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// restrictedNamespace enforces the restricted Pod Security Standard: the
// controller's pod and the helm test pod are created there as a dry run.
const restrictedNamespace = "chart-restricted"

// TestDryRun applies every object each ci values file renders to the API
// server as a server-side dry run: the CRD schemas, the built-in validation
// and our validating webhook check them. An object another values file
// rendered the same, byte for byte, is sent once (125 of 312): nothing
// here changes what the API server holds, so it would get the same answer.
func TestDryRun(t *testing.T) {
	sent := map[string]bool{} // the objects sent, as JSON
	for _, chart := range []string{chartDir, crdsChartDir} {
		values := ciValues(t, chart)
		for _, name := range slices.Sorted(maps.Keys(values)) {
			t.Run(filepath.Base(chart)+"/"+name, func(t *testing.T) {
				_, objs := render(t, templateArgs(chart, values[name])...)
				if len(objs) == 0 {
					t.Fatal("nothing rendered")
				}
				for _, o := range objs {
					data, err := o.MarshalJSON()
					if err != nil {
						t.Fatal(err)
					}
					if sent[string(data)] {
						continue
					}
					sent[string(data)] = true
					if ns := o.GetNamespace(); ns != "" {
						testenv.EnsureNamespace(t, cp.Client, ns)
					}
					if err := dryRun(t, o.DeepCopy()); err != nil {
						t.Errorf("%s %s/%s rejected: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
					}
				}
			})
		}
	}
}

// dryRun creates obj, or replaces it when it exists (the CRDs do), as a
// dry run: the whole object is checked, not a merge with what is live.
func dryRun(t *testing.T, obj *unstructured.Unstructured) error {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), live)
	switch {
	case apierrors.IsNotFound(err):
		return cp.Client.Create(t.Context(), obj, client.DryRunAll)
	case err != nil:
		return err
	}
	obj.SetResourceVersion(live.GetResourceVersion())
	return cp.Client.Update(t.Context(), obj, client.DryRunAll)
}

// TestPodsAreRestricted creates the controller's pod and the helm test pod
// in a namespace that enforces the restricted Pod Security Standard (as a
// dry run: the API server admits or rejects them, nothing runs).
func TestPodsAreRestricted(t *testing.T) {
	ns := &corev1.Namespace{}
	ns.Name = restrictedNamespace
	ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}
	if err := cp.Client.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) { // made by an earlier run (-count)
		t.Fatal(err)
	}
	values := ciValues(t, chartDir)
	for _, name := range slices.Sorted(maps.Keys(values)) {
		t.Run(name, func(t *testing.T) {
			_, objs := render(t, templateArgs(chartDir, values[name])...)
			deploy := one(t, objs, "Deployment", "odh-serving-controller")
			template, _, _ := unstructured.NestedMap(deploy.Object, "spec", "template")
			pods := map[string]*corev1.Pod{"controller": podFrom(t, template), "helm test": podFrom(t, one(t, objs, "Pod", "odh-serving-test").Object)}
			for what, pod := range pods {
				pod.Name, pod.Namespace = "restricted-"+name, restrictedNamespace
				if err := cp.Client.Create(t.Context(), pod, client.DryRunAll); err != nil {
					t.Errorf("the %s pod is not restricted: %v", what, err)
				}
			}
		})
	}
}

func podFrom(t *testing.T, obj map[string]any) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, pod); err != nil {
		t.Fatal(err)
	}
	pod.ObjectMeta = metav1.ObjectMeta{}
	return pod
}
