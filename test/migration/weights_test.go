package migrationtest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/migration"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// helmRoute is a route as Helm renders it in static mode at phase dual.
func helmRoute(ns string) *gatewayv1.HTTPRoute {
	pool := func(group string, w int32) gatewayv1.HTTPBackendRef {
		g, k := gatewayv1.Group(group), gatewayv1.Kind("InferencePool")
		return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Group: &g, Kind: &k, Name: "llm-inference-pool"}, Weight: &w}}
	}
	svcKind, port, one := gatewayv1.Kind("Service"), gatewayv1.PortNumber(8000), int32(1)
	prefix := gatewayv1.PathMatchPathPrefix
	return &gatewayv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm-kserve-route", Namespace: ns, Labels: renderedLabels()},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kserve-ingress-gateway"}}},
			Hostnames:       []gatewayv1.Hostname{"llm.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{
				{
					Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: ptr("/v1/completions")}}},
					BackendRefs: []gatewayv1.HTTPBackendRef{pool(build.GroupPoolV1alpha2, 100), pool(build.GroupPoolV1, 0)},
				},
				{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
					BackendObjectReference: gatewayv1.BackendObjectReference{Kind: &svcKind, Name: "llm-kserve-workload-svc", Port: &port}, Weight: &one}}}},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// renderedLabels are the labels the engine gives the children of service
// llm; in static mode the controller finds a service's objects by them.
func renderedLabels() map[string]string {
	return map[string]string{convention.LabelName: "llm", convention.LabelPartOf: convention.PartOf}
}

// TestApplyWeights moves a Helm-made route from dual to v1 by weights
// alone and checks that every other field, and its owner, stays.
func TestApplyWeights(t *testing.T) {
	ctx := t.Context()
	c, w := testenv.RecordingClient(t, cp.Config, cp.Scheme)
	ns := testenv.NewNamespace(t, c, "static-weights")

	// Helm 4 applies the route; someone else adds a label.
	route := helmRoute(ns)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(route)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: obj}), client.FieldOwner("helm")); err != nil {
		t.Fatal(err)
	}
	labelPatch := []byte(`{"metadata":{"labels":{"team":"a"}}}`)
	if err := c.Patch(ctx, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: route.Name, Namespace: ns}}, client.RawPatch("application/merge-patch+json", labelPatch), client.FieldOwner("labeller")); err != nil {
		t.Fatal(err)
	}
	live := getRoute(t, c, ns, route.Name)
	before := live.DeepCopy()

	w.Take()
	changed, err := migration.ApplyWeights(ctx, c, live, convention.PhaseDual)
	if err != nil || changed {
		t.Fatalf("dual on a dual route: changed %v, %v", changed, err)
	}
	if got := w.Take(); len(got) != 0 {
		t.Errorf("a route that is right was written: %v", got)
	}

	changed, err = migration.ApplyWeights(ctx, c, live, convention.PhaseV1)
	if err != nil || !changed {
		t.Fatalf("v1 on a dual route: changed %v, %v", changed, err)
	}
	if got := w.Take(); !slices.Equal(got, []string{"PATCH /apis/gateway.networking.k8s.io/v1/namespaces/" + ns + "/httproutes/llm-kserve-route"}) {
		t.Errorf("want one apply, got %v", got)
	}
	after := getRoute(t, c, ns, route.Name)
	if got := weights(after); got != "alpha2=0 v1=100 | Service=1" {
		t.Errorf("weights after v1: %s", got)
	}
	if after.Annotations[migration.AnnotationMigrated] != "v1" {
		t.Errorf("annotations: %v", after.Annotations)
	}
	// Everything but the weights and the annotation is as it was.
	want := before.DeepCopy()
	want.Spec.Rules[0].BackendRefs[0].Weight, want.Spec.Rules[0].BackendRefs[1].Weight = ptr[int32](0), ptr[int32](100)
	if jsonString(want.Spec) != jsonString(after.Spec) || after.Labels["team"] != "a" || after.Labels["app.kubernetes.io/name"] != "llm" {
		t.Errorf("ApplyWeights changed more than the weights:\nbefore %+v\nafter  %+v", before.Spec, after.Spec)
	}
	owners := fieldOwners(t, after)
	if !strings.Contains(owners["helm"], "f:parentRefs") || !strings.Contains(owners["helm"], "f:hostnames") {
		t.Errorf("helm lost its fields: %s", owners["helm"])
	}
	if !strings.Contains(owners["labeller"], `f:team`) {
		t.Errorf("the labeller lost its label: %s", owners["labeller"])
	}
	ours := owners[convention.MigrationFieldManager]
	if !strings.Contains(ours, "f:rules") || !strings.Contains(ours, migration.AnnotationMigrated) || strings.Contains(ours, "f:parentRefs") || strings.Contains(ours, "f:hostnames") || strings.Contains(ours, "f:labels") {
		t.Errorf("%s should own the rules (an atomic list) and the annotation only: %s", convention.MigrationFieldManager, ours)
	}

	t.Run("again writes nothing", func(t *testing.T) {
		for _, phase := range []convention.Phase{convention.PhaseV1, convention.PhaseRetired} {
			changed, err := migration.ApplyWeights(ctx, c, after, phase)
			if err != nil || changed {
				t.Errorf("%s: changed %v, %v", phase, changed, err)
			}
		}
		if got := w.Take(); len(got) != 0 {
			t.Errorf("writes: %v", got)
		}
	})

	t.Run("a stale copy is checked against the live route", func(t *testing.T) {
		changed, err := migration.ApplyWeights(ctx, c, before, convention.PhaseV1)
		if err != nil || changed {
			t.Errorf("changed %v, %v", changed, err)
		}
		if got := w.Take(); len(got) != 0 {
			t.Errorf("writes: %v", got)
		}
	})

	t.Run("a lone v1alpha2 backend cannot move by weights", func(t *testing.T) {
		lone := helmRoute(ns)
		lone.Name = "lone"
		lone.Spec.Rules[0].BackendRefs = lone.Spec.Rules[0].BackendRefs[:1]
		if err := c.Create(ctx, lone); err != nil {
			t.Fatal(err)
		}
		w.Take()
		_, err := migration.ApplyWeights(ctx, c, lone, convention.PhaseV1)
		if !errors.Is(err, migration.ErrNoV1Backend) || !strings.Contains(err.Error(), "route "+ns+"/lone") {
			t.Errorf("err = %v", err)
		}
		if got := w.Take(); len(got) != 0 {
			t.Errorf("writes: %v", got)
		}
	})
}

func getRoute(t *testing.T, c client.Client, ns, name string) *gatewayv1.HTTPRoute {
	t.Helper()
	r := &gatewayv1.HTTPRoute{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// weights is "group=weight" per backend, rules separated by |.
func weights(r *gatewayv1.HTTPRoute) string {
	var rules []string
	for _, rule := range r.Spec.Rules {
		var bs []string
		for _, b := range rule.BackendRefs {
			name := string(*b.Kind)
			if b.Group != nil && *b.Group == build.GroupPoolV1alpha2 {
				name = "alpha2"
			} else if b.Group != nil && *b.Group == build.GroupPoolV1 {
				name = "v1"
			}
			bs = append(bs, name+"="+jsonString(b.Weight))
		}
		rules = append(rules, strings.Join(bs, " "))
	}
	return strings.Join(rules, " | ")
}

func jsonString(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// fieldOwners maps each field manager to the JSON of the fields it owns.
func fieldOwners(t *testing.T, obj metav1.Object) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, mf := range obj.GetManagedFields() {
		if mf.FieldsV1 != nil {
			out[mf.Manager] += string(mf.FieldsV1.Raw)
		}
	}
	return out
}
