package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// TestPoolRefNamesOnlyKnownGroups renders the external-pool case (a
// service with spec.router.scheduler.pool.ref) in every phase for each set
// of API groups the referenced pool may exist in. The route names the pool
// only in the groups it exists in; when it is known in neither, in one
// assumed group, and the result and its warnings say so.
func TestPoolRefNamesOnlyKnownGroups(t *testing.T) {
	svc, catalog, opts := loadCase(t, "external-pool")
	v1, alpha2 := build.GroupPoolV1, build.GroupPoolV1alpha2
	for _, phase := range convention.Phases {
		for _, tc := range []struct {
			found, want []string
			assumed     bool
		}{
			{found: []string{v1}, want: []string{v1}},
			{found: []string{alpha2}, want: []string{alpha2}},
			{found: []string{v1, alpha2}, want: bothGroupsIn(phase)},
			{found: nil, want: []string{assumedGroup(phase)}, assumed: true},
		} {
			t.Run(fmt.Sprintf("%s/found=%v", phase, tc.found), func(t *testing.T) {
				opts := opts
				opts.Phase, opts.PoolRefGroups = phase, tc.found
				res, err := engine.Render(t.Context(), svc, catalog, opts)
				if err != nil {
					t.Fatal(err)
				}
				var rt *gatewayv1.HTTPRoute
				for _, o := range res.Objects {
					if r, ok := o.(*gatewayv1.HTTPRoute); ok {
						rt = r
					}
				}
				if rt == nil {
					t.Fatal("no route rendered")
				}
				pools := 0
				for i, rule := range rt.Spec.Rules {
					var groups []string
					for _, b := range rule.BackendRefs {
						if b.Kind != nil && *b.Kind == "InferencePool" {
							groups = append(groups, string(*b.Group))
							if b.Name != "platform-pool" {
								t.Errorf("rule %d names pool %s, want platform-pool", i, b.Name)
							}
						}
					}
					if len(groups) == 0 {
						continue
					}
					pools++
					if !slices.Equal(groups, tc.want) {
						t.Errorf("rule %d names the pool in %v, want %v", i, groups, tc.want)
					}
				}
				if pools == 0 {
					t.Fatal("no rule names the referenced pool")
				}
				if res.PoolRef == nil || res.PoolRef.Assumed != tc.assumed || !slices.Equal(res.PoolRef.Groups, tc.want) {
					t.Errorf("PoolRef = %+v, want groups %v, assumed %v", res.PoolRef, tc.want, tc.assumed)
				}
				warned := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "the route assumes it is in "+tc.want[0]) })
				if warned != tc.assumed {
					t.Errorf("warnings %q: want the assumption stated: %v", res.Warnings, tc.assumed)
				}
			})
		}
	}
}

// bothGroupsIn is the pool groups a phase names a pool that exists in both
// groups in, in route order.
func bothGroupsIn(phase convention.Phase) []string {
	switch phase {
	case convention.PhaseAlpha2:
		return []string{build.GroupPoolV1alpha2}
	case convention.PhaseDual:
		return []string{build.GroupPoolV1alpha2, build.GroupPoolV1}
	case convention.PhaseV1:
		return []string{build.GroupPoolV1, build.GroupPoolV1alpha2}
	default:
		return []string{build.GroupPoolV1}
	}
}

// assumedGroup is the group the phase sends traffic to.
func assumedGroup(phase convention.Phase) string {
	if phase == convention.PhaseAlpha2 || phase == convention.PhaseDual {
		return build.GroupPoolV1alpha2
	}
	return build.GroupPoolV1
}
