package engine_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
)

// A service published to a tier, with a MaaS gateway named, gets a route
// of its own on the MaaS gateway only and the AuthPolicy that checks MaaS
// callers against it by name; the managed route no longer attaches to the
// MaaS gateway. The enable-auth opt-out (item 5 of issue 32) opens the
// managed route only: its anonymous policy targets that route, and the
// MaaS route's policy is the same with and without it. Not published (no
// tier granted, stopped, MaaS off): no MaaS route.
func TestMaaSRoute(t *testing.T) {
	tiers, err := tier.Parse("- {name: free, level: 0}\n- {name: premium, level: 1}", "")
	if err != nil {
		t.Fatal(err)
	}
	images := presetstest.Images(t)
	render := func(t *testing.T, annotations map[string]string, tiers *tier.Config) *engine.Result {
		t.Helper()
		_, svc := prepareCase(t, "cpu-single")
		svc = svc.DeepCopy()
		svc.Annotations = annotations
		res, err := engine.Render(t.Context(), svc, presetstest.Catalog(t, nil), engine.Options{
			Tiers: tiers, Images: images, Auth: true, MaaSGatewayName: "maas-default-gateway", MaaSGatewayNamespace: "maas-ns",
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	object := func(t *testing.T, res *engine.Result, role engine.Role) *unstructured.Unstructured {
		t.Helper()
		name := res.Named(role)
		objs, err := res.Unstructured()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if name != "" && o.GetName() == name {
				return o
			}
		}
		return nil
	}
	parents := func(t *testing.T, o *unstructured.Unstructured) []string {
		t.Helper()
		refs, _, _ := unstructured.NestedSlice(o.Object, "spec", "parentRefs")
		var out []string
		for _, r := range refs {
			m := r.(map[string]any)
			ns, _ := m["namespace"].(string)
			out = append(out, ns+"/"+m["name"].(string))
		}
		return out
	}

	published := render(t, map[string]string{tier.AnnotationTiers: `["premium"]`}, tiers)
	maasRoute, policy := object(t, published, engine.RoleMaaSRoute), object(t, published, engine.RoleMaaSAuth)
	if maasRoute == nil || policy == nil {
		t.Fatalf("published: no MaaS route or policy; built %v", built(published))
	}
	if maasRoute.GetName() != "sim-kserve-maas-route" || policy.GetName() != "sim-kserve-maas-route-authn" {
		t.Errorf("names %s, %s", maasRoute.GetName(), policy.GetName())
	}
	if got := parents(t, maasRoute); !slices.Equal(got, []string{"maas-ns/maas-default-gateway"}) {
		t.Errorf("MaaS route parents %v, want the MaaS gateway only", got)
	}
	managed := object(t, published, engine.RoleRoute)
	if got := parents(t, managed); slices.Contains(got, "maas-ns/maas-default-gateway") {
		t.Errorf("managed route parents %v: the MaaS gateway is the MaaS route's alone", got)
	}
	// The same rules as the managed route, each dropping Authorization.
	var mr, mm gatewayv1.HTTPRoute
	toTyped(t, maasRoute, &mr)
	toTyped(t, managed, &mm)
	if len(mr.Spec.Rules) != len(mm.Spec.Rules) || len(mr.Spec.Rules) == 0 {
		t.Fatalf("MaaS route has %d rules, the managed route %d", len(mr.Spec.Rules), len(mm.Spec.Rules))
	}
	for i, r := range mr.Spec.Rules {
		if !slices.Equal(matchPaths(r), matchPaths(mm.Spec.Rules[i])) {
			t.Errorf("rule %d matches %v, managed %v", i, matchPaths(r), matchPaths(mm.Spec.Rules[i]))
		}
		if !slices.ContainsFunc(r.Filters, func(f gatewayv1.HTTPRouteFilter) bool {
			return f.RequestHeaderModifier != nil && slices.Contains(f.RequestHeaderModifier.Remove, "Authorization")
		}) {
			t.Errorf("rule %d (%v) does not remove Authorization", i, matchPaths(r))
		}
	}
	// The SubjectAccessReview names the service by value, not by path.
	attrs, _, _ := unstructured.NestedMap(policy.Object, "spec", "rules", "authorization", "model-access",
		"kubernetesSubjectAccessReview", "resourceAttributes")
	for field, want := range map[string]string{"namespace": "demo", "name": "sim", "verb": "post"} {
		got, _, _ := unstructured.NestedString(attrs, field, "value")
		expr, _, _ := unstructured.NestedString(attrs, field, "expression")
		if got != want || expr != "" {
			t.Errorf("resourceAttributes.%s = value %q expression %q, want the value %q", field, got, expr, want)
		}
	}
	if aud, _, _ := unstructured.NestedStringSlice(policy.Object, "spec", "rules", "authentication", "maas-token",
		"kubernetesTokenReview", "audiences"); !slices.Equal(aud, []string{convention.MaaSTokenAudience}) {
		t.Errorf("audiences %v", aud)
	}

	// Item 5: the opt-out opens the managed route, never the MaaS route.
	opened := render(t, map[string]string{tier.AnnotationTiers: `["premium"]`, convention.AnnotationEnableAuth: "false"}, tiers)
	anon := object(t, opened, engine.RoleAuth)
	if anon == nil {
		t.Fatalf("opened: no anonymous policy; built %v", built(opened))
	}
	if target, _, _ := unstructured.NestedString(anon.Object, "spec", "targetRef", "name"); target != "sim-kserve-route" {
		t.Errorf("the anonymous policy targets %q, want the managed route only", target)
	}
	openedPolicy := object(t, opened, engine.RoleMaaSAuth)
	if openedPolicy == nil || !equalSpec(openedPolicy, policy) {
		t.Errorf("opened: the MaaS route's policy changed with the opt-out:\n%v\nwant\n%v", openedPolicy, policy)
	}

	for name, tc := range map[string]struct {
		annotations map[string]string
		tiers       *tier.Config
	}{
		"unknown tier only": {map[string]string{tier.AnnotationTiers: `["gold"]`}, tiers},
		"not published":     {nil, tiers},
		"MaaS off":          {map[string]string{tier.AnnotationTiers: `["premium"]`}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			res := render(t, tc.annotations, tc.tiers)
			if res.Named(engine.RoleMaaSRoute) != "" || res.Named(engine.RoleMaaSAuth) != "" {
				t.Errorf("built %v: want no MaaS route", built(res))
			}
		})
	}
}

func toTyped(t *testing.T, u *unstructured.Unstructured, dst any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dst); err != nil {
		t.Fatal(err)
	}
}

func matchPaths(r gatewayv1.HTTPRouteRule) []string {
	var out []string
	for _, m := range r.Matches {
		if m.Path != nil && m.Path.Value != nil {
			out = append(out, *m.Path.Value)
		}
	}
	return out
}

func equalSpec(a, b *unstructured.Unstructured) bool {
	sa, _, _ := unstructured.NestedMap(a.Object, "spec")
	sb, _, _ := unstructured.NestedMap(b.Object, "spec")
	return cmp.Equal(sa, sb)
}
