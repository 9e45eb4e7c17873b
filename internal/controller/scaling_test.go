package controller

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

func hpaFor(name, apiVersion, kind, target string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: target},
		},
	}
}

func scaledObjectFor(name string, ref map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"scaleTargetRef": ref}}}
	u.SetGroupVersionKind(gvkScaledObject)
	u.SetNamespace("ns")
	u.SetName(name)
	return u
}

// TestForScaler: an autoscaler's events reach the service whose workload
// it scales, found through the workload's controller, and no other; a
// ScaledObject's target defaults to a Deployment as KEDA's does.
func TestForScaler(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	owned := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-kserve"}}
	owned.OwnerReferences = []metav1.OwnerReference{ownerReference(svcWith("ns", "llm", v1alpha2.LLMInferenceServiceSpec{}))}
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	r := &Reconciler{kinds: newAvailability()}
	r.client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(owned, other).Build()

	for _, c := range []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"HPA on the service's Deployment", hpaFor("h", "apps/v1", "Deployment", "llm-kserve"), []string{"ns/llm"}},
		{"HPA on another Deployment", hpaFor("h", "apps/v1", "Deployment", "web"), nil},
		{"HPA on a missing Deployment", hpaFor("h", "apps/v1", "Deployment", "gone"), nil},
		{"HPA on a LeaderWorkerSet, LWS not served", hpaFor("h", "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "llm-kserve"), nil},
		{"ScaledObject with the default target", scaledObjectFor("s", map[string]any{"name": "llm-kserve"}), []string{"ns/llm"}},
		{"ScaledObject on a StatefulSet", scaledObjectFor("s", map[string]any{"kind": "StatefulSet", "name": "llm-kserve"}), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, req := range r.forScaler(context.Background(), c.obj) {
				got = append(got, req.String())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("forScaler = %v, want %v", got, c.want)
			}
		})
	}
}

// TestScalersOf: the index finds a workload's HPAs by group, kind and
// name, and ScaledObjects only once KEDA's CRD is served.
func TestScalersOf(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, obj := range []client.Object{&autoscalingv2.HorizontalPodAutoscaler{}, newUnstructured(gvkScaledObject)} {
		if err := indexScalers(context.Background(), builderIndexer{b}, obj); err != nil {
			t.Fatal(err)
		}
	}
	r := &Reconciler{kinds: newAvailability()}
	r.client = b.WithObjects(
		hpaFor("on-deployment", "apps/v1", "Deployment", "w"),
		hpaFor("on-lws", "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "w"),
		hpaFor("on-other", "apps/v1", "Deployment", "x"),
		scaledObjectFor("keda", map[string]any{"name": "w"}),
	).Build()
	names := func() []string {
		found, err := r.scalersOf(context.Background(), "ns", gvkDeployment, "w")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range found {
			out = append(out, o.GetName())
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{"on-deployment"}) {
		t.Errorf("without KEDA: %v, want [on-deployment]", got)
	}
	r.kinds.set(crdScaledObject, true)
	if got := names(); !slices.Equal(got, []string{"on-deployment", "keda"}) {
		t.Errorf("with KEDA: %v, want [on-deployment keda]", got)
	}
}

func newUnstructured(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// TestOwnsReplicas reads spec.replicas out of managed fields: only an
// apply by the manager counts.
func TestOwnsReplicas(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	const replicas = `{"f:metadata":{"f:labels":{}},"f:spec":{"f:replicas":{},"f:template":{}}}`
	const noReplicas = `{"f:spec":{"f:template":{}}}`
	for _, c := range []struct {
		name   string
		fields []metav1.ManagedFieldsEntry
		want   bool
	}{
		{"applied", []metav1.ManagedFieldsEntry{entry(convention.FieldManager, metav1.ManagedFieldsOperationApply, replicas)}, true},
		{"applied without replicas", []metav1.ManagedFieldsEntry{entry(convention.FieldManager, metav1.ManagedFieldsOperationApply, noReplicas)}, false},
		{"another manager", []metav1.ManagedFieldsEntry{
			entry(convention.FieldManager, metav1.ManagedFieldsOperationApply, noReplicas),
			entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, replicas),
		}, false},
		{"an update, not an apply", []metav1.ManagedFieldsEntry{entry(convention.FieldManager, metav1.ManagedFieldsOperationUpdate, replicas)}, false},
		{"no managed fields", nil, false},
	} {
		if got := ownsReplicas(c.fields, convention.FieldManager); got != c.want {
			t.Errorf("%s: ownsReplicas = %v, want %v", c.name, got, c.want)
		}
	}
}
