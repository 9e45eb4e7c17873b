package migration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// ErrNoV1Backend means a route cannot move to v1 by weights alone: a rule
// sends to a v1alpha2 pool with no v1 pool beside it.
var ErrNoV1Backend = errors.New("a rule has a v1alpha2 InferencePool backend but no v1 backend of the same name to move the traffic to")

// ApplyWeights moves the traffic of a route that someone else (Helm, in
// static mode) makes: it sets the weights of each pair of InferencePool
// backends of the same name (v1alpha2 and v1) for the phase, and in v1 and
// retired it adds the migrated annotation. Nothing else changes. When the
// route is already right it writes nothing and returns false.
//
// The write is a server-side apply under field manager
// odh-serving-migration. HTTPRoute rules are an atomic list, so any write
// of a weight must carry every rule; the apply carries them as they are
// live (read as unstructured, so fields newer than our Gateway API types
// survive) with only the weights changed, plus the route's resourceVersion,
// so a change by someone else in between fails with a conflict instead of
// being overwritten. A JSON merge patch would need the whole list too; the
// apply also records odh-serving-migration as the owner of what it set.
func ApplyWeights(ctx context.Context, c client.Client, route *gatewayv1.HTTPRoute, phase convention.Phase) (bool, error) {
	if route == nil {
		return false, nil
	}
	name := route.Namespace + "/" + route.Name
	mark := phase == convention.PhaseV1 || phase == convention.PhaseRetired
	// Check the route as given first, so a route that is right costs no request.
	given, err := runtime.DefaultUnstructuredConverter.ToUnstructured(route)
	if err != nil {
		return false, fmt.Errorf("route %s: %w", name, err)
	}
	changed, err := setPoolWeights(given, phase)
	if err != nil {
		return false, fmt.Errorf("route %s: %w", name, err)
	}
	if !changed && (!mark || route.Annotations[AnnotationMigrated] == MigratedValue) {
		return false, nil
	}

	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gatewayv1.SchemeGroupVersion.WithKind("HTTPRoute"))
	if err := c.Get(ctx, client.ObjectKeyFromObject(route), live); err != nil {
		return false, fmt.Errorf("read route %s: %w", name, err)
	}
	changed, err = setPoolWeights(live.Object, phase)
	if err != nil {
		return false, fmt.Errorf("route %s: %w", name, err)
	}
	if !changed && (!mark || live.GetAnnotations()[AnnotationMigrated] == MigratedValue) {
		return false, nil // the route changed since it was read, and is right now
	}
	rules, _, _ := unstructured.NestedFieldNoCopy(live.Object, "spec", "rules")
	patch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gatewayv1.SchemeGroupVersion.String(),
		"kind":       "HTTPRoute",
		"metadata": map[string]any{
			"name":            route.Name,
			"namespace":       route.Namespace,
			"resourceVersion": live.GetResourceVersion(),
		},
		"spec": map[string]any{"rules": rules},
	}}
	if mark {
		patch.SetAnnotations(map[string]string{AnnotationMigrated: MigratedValue})
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(patch), client.FieldOwner(convention.MigrationFieldManager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("patch the weights of route %s for phase %s: %w", name, phase, err)
	}
	return true, nil
}

// setPoolWeights sets, in an unstructured route, the weights of each pair
// of InferencePool backends of the same name in a rule: v1 100 and v1alpha2
// 0 in phases v1 and retired, the other way round before. A lone pool
// backend keeps its weight. It reports whether a weight changed, and fails
// when the traffic must move to v1 and a v1alpha2 backend has no v1 partner.
func setPoolWeights(route map[string]any, phase convention.Phase) (bool, error) {
	toV1 := phase == convention.PhaseV1 || phase == convention.PhaseRetired
	want := map[string]int64{build.GroupPoolV1: 0, build.GroupPoolV1alpha2: 100}
	if toV1 {
		want = map[string]int64{build.GroupPoolV1: 100, build.GroupPoolV1alpha2: 0}
	}
	rules, _, err := unstructured.NestedSlice(route, "spec", "rules")
	if err != nil {
		return false, fmt.Errorf("spec.rules: %w", err)
	}
	changed := false
	for i, r := range rules {
		rule, _ := r.(map[string]any) // rules is a copy: set back below
		refs, _ := rule["backendRefs"].([]any)
		// pools maps a pool name to its backends by group.
		pools := map[string]map[string]map[string]any{}
		for _, x := range refs {
			ref, _ := x.(map[string]any)
			group, _ := ref["group"].(string)
			kind, _ := ref["kind"].(string)
			name, _ := ref["name"].(string)
			if kind != "InferencePool" || (group != build.GroupPoolV1 && group != build.GroupPoolV1alpha2) {
				continue
			}
			if pools[name] == nil {
				pools[name] = map[string]map[string]any{}
			}
			pools[name][group] = ref
		}
		for _, name := range slices.Sorted(maps.Keys(pools)) {
			byGroup := pools[name]
			if len(byGroup) < 2 {
				if _, alone := byGroup[build.GroupPoolV1alpha2]; alone && toV1 {
					return false, fmt.Errorf("spec.rules[%d], pool %s: %w", i, name, ErrNoV1Backend)
				}
				continue
			}
			for group, ref := range byGroup {
				if weight(ref["weight"]) != want[group] {
					ref["weight"] = want[group]
					changed = true
				}
			}
		}
	}
	if changed {
		if err := unstructured.SetNestedSlice(route, rules, "spec", "rules"); err != nil {
			return false, fmt.Errorf("spec.rules: %w", err)
		}
	}
	return changed, nil
}

// weight reads a backend weight; a missing one is Gateway API's default, 1.
func weight(v any) int64 {
	switch w := v.(type) {
	case int64:
		return w
	case int32:
		return int64(w)
	case float64:
		return int64(w)
	}
	return 1
}
