package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// TestCacheHoldsOnlyOurObjectsOfBusyKinds: the manager's cache keeps, of
// the kinds a cluster holds many of, only the objects with a label of
// ours (a child's, or the managed-by label of odh-serving's Secrets);
// the kinds whose users' objects the controller reads (autoscalers,
// routes) it keeps whole.
func TestCacheHoldsOnlyOurObjectsOfBusyKinds(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[schema.GroupVersionKind]labels.Selector{}
	for obj, by := range cacheOptions(Options{}.withDefaults()).ByObject {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			t.Fatal(err)
		}
		byKind[gvk] = by.Label
	}
	child := labels.Set{convention.LabelPartOf: convention.PartOf, convention.LabelName: "llm", convention.LabelComponent: "workload"}
	managed := labels.Set{convention.LabelManagedBy: convention.ManagedBy}
	unrelated := labels.Set{"app": "unrelated"}
	for gvk, ours := range map[schema.GroupVersionKind]labels.Set{
		gvkDeployment: child, gvkService: child, gvkServiceAccount: child, gvkRole: child, gvkRoleBinding: child,
		gvkClusterRoleBinding: child, gvkSecret: managed, {Version: "v1", Kind: "Pod"}: child,
	} {
		sel := byKind[gvk]
		switch {
		case sel == nil || sel.Empty():
			t.Errorf("the cache holds every %s: no label selector", gvk.Kind)
		case !sel.Matches(ours):
			t.Errorf("the cache's selector of %ss, %s, misses ours (%v)", gvk.Kind, sel, ours)
		case sel.Matches(unrelated) || sel.Matches(labels.Set{}):
			t.Errorf("the cache's selector of %ss, %s, keeps others' objects", gvk.Kind, sel)
		}
	}
	for _, gvk := range []schema.GroupVersionKind{gvkHPA, gvkHTTPRoute} {
		if sel := byKind[gvk]; sel != nil && !sel.Empty() {
			t.Errorf("the cache selects %ss by %s; the controller must find users' too", gvk.Kind, sel)
		}
	}
}
