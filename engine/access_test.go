package engine_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
)

// The model-user Role and the tiers' RoleBindings are children like the
// others: RoleModelAccess, the Role in wave 0 and its bindings in wave 1.
// Bad input fails closed and says why in Result.Access: a malformed
// annotation, or one naming only unknown tiers, builds none of them; an
// unknown name among known ones gets no binding while the known ones do. The rest of the service still renders; without
// tiers (MaaS off) the annotation is ignored.
func TestModelAccess(t *testing.T) {
	tiers, err := tier.Parse("- {name: free, level: 0}\n- {name: premium, level: 1}", "")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		annotation string // "" for none
		tiers      *tier.Config
		stop       bool
		want       []string
		bound      []string
		err        string
	}{
		"premium only": {annotation: `["premium"]`, tiers: tiers,
			want: []string{"0 model-access Role sim-model-user", "1 model-access RoleBinding sim-model-user-premium"}, bound: []string{"premium"}},
		"every tier": {annotation: `[]`, tiers: tiers,
			want:  []string{"0 model-access Role sim-model-user", "1 model-access RoleBinding sim-model-user-free", "1 model-access RoleBinding sim-model-user-premium"},
			bound: []string{"free", "premium"}},
		"not published":  {tiers: tiers},
		"MaaS off":       {annotation: `["premium"]`},
		"stopped":        {annotation: `["premium"]`, tiers: tiers, stop: true},
		"unknown tier":   {annotation: `["gold"]`, tiers: tiers, err: `annotation alpha.maas.opendatahub.io/tiers: "[\"gold\"]" names unknown tier "gold"`},
		"malformed list": {annotation: `premium`, tiers: tiers, err: `annotation alpha.maas.opendatahub.io/tiers: "premium" is not a JSON list`},
		"unknown among known": {annotation: `["gold","premium"]`, tiers: tiers, err: `names unknown tier "gold"`,
			want: []string{"0 model-access Role sim-model-user", "1 model-access RoleBinding sim-model-user-premium"}, bound: []string{"premium"}},
	}
	images := presetstest.Images(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, svc := prepareCase(t, "cpu-single")
			svc = svc.DeepCopy()
			svc.Annotations = map[string]string{}
			if tc.annotation != "" {
				svc.Annotations[tier.AnnotationTiers] = tc.annotation
			}
			if tc.stop {
				svc.Annotations[convention.AnnotationStop] = "true"
			}
			res, err := engine.Render(t.Context(), svc, presetstest.Catalog(t, nil), engine.Options{Tiers: tc.tiers, Images: images})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range built(res) {
				if strings.Contains(line, string(engine.RoleModelAccess)) {
					got = append(got, line)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("access children (-want +got):\n%s", d)
			}
			if tc.err != "" {
				if res.Access.Err == nil || !strings.Contains(res.Access.Err.Error(), tc.err) {
					t.Errorf("Access.Err = %v, want it to contain %q", res.Access.Err, tc.err)
				}
			} else if res.Access.Err != nil {
				t.Errorf("Access.Err = %v", res.Access.Err)
			}
			if d := cmp.Diff(tc.bound, res.Access.Tiers, cmpEmpty); d != "" {
				t.Errorf("Access.Tiers (-want +got):\n%s", d)
			}
			published := tc.annotation != "" && tc.tiers != nil && !tc.stop
			if res.Access.Published != published {
				t.Errorf("Access.Published = %v, want %v", res.Access.Published, published)
			}
			if !tc.stop && !slices.ContainsFunc(res.Children, func(c engine.Child) bool { return c.Role == engine.RoleMain }) {
				t.Error("the workload was not rendered beside the access objects")
			}
		})
	}
}

var cmpEmpty = cmp.Comparer(slices.Equal[[]string])
