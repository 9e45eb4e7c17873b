package preset_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestWellKnown(t *testing.T) {
	dp := &v1alpha2.ParallelismSpec{Data: ptr.To[int32](4), DataLocal: ptr.To[int32](2)}
	pp := &v1alpha2.ParallelismSpec{Pipeline: ptr.To[int32](2)}
	worker := &corev1.PodSpec{}
	tests := map[string]struct {
		spec v1alpha2.LLMInferenceServiceSpec
		want []string
	}{
		"single node":     {want: []string{"config-llm-template"}},
		"data parallel":   {spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Parallelism: dp, Worker: worker}}, want: []string{"config-llm-worker-data-parallel"}},
		"pipeline":        {spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Parallelism: pp, Worker: worker}}, want: []string{"config-llm-worker-pipeline-parallel"}},
		"worker, no size": {spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Worker: worker}}, want: nil},
		"prefill/decode with router": {
			spec: v1alpha2.LLMInferenceServiceSpec{
				Prefill: &v1alpha2.WorkloadSpec{Parallelism: dp, Worker: worker},
				Router:  &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}, Scheduler: &v1alpha2.SchedulerSpec{}},
			},
			want: []string{"config-llm-scheduler", "config-llm-router-route", "config-llm-prefill-worker-data-parallel", "config-llm-decode-template"},
		},
		"pool ref and route refs need no router presets": {
			spec: v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{
				Route:     &v1alpha2.GatewayRoutesSpec{HTTP: &v1alpha2.HTTPRouteSpec{Refs: []corev1.LocalObjectReference{{Name: "r"}}}},
				Scheduler: &v1alpha2.SchedulerSpec{Pool: &v1alpha2.InferencePoolSpec{Ref: &corev1.LocalObjectReference{Name: "p"}}},
			}},
			want: []string{"config-llm-template"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, preset.WellKnown(&tc.spec, "")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := preset.WellKnown(&v1alpha2.LLMInferenceServiceSpec{}, "odh-"); got[0] != "odh-config-llm-template" {
		t.Errorf("prefix not applied: %v", got)
	}
}

func TestLookupPrefersTheNamespace(t *testing.T) {
	system := &preset.Preset{Name: "p", Spec: &v1alpha2.LLMInferenceServiceSpec{}}
	local := &preset.Preset{Name: "p", Namespace: "team", Spec: &v1alpha2.LLMInferenceServiceSpec{}}
	c, err := preset.NewCatalog("sys", []*preset.Preset{system, local})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Lookup("p", "team"); got != local {
		t.Errorf("team sees %s, want its own preset", got.ID())
	}
	if got, _ := c.Lookup("p", "other"); got != system {
		t.Errorf("other sees %s, want the system preset", got.ID())
	}
	_, err = c.Lookup("missing", "team")
	if !errors.Is(err, preset.ErrNotFound) || !strings.Contains(err.Error(), `"team"`) || !strings.Contains(err.Error(), `"sys"`) {
		t.Errorf("error = %v, want ErrNotFound naming both namespaces", err)
	}
}

// OverlayLazy loads the base presets only when a lookup needs one the top
// presets lack, once, and then behaves as Overlay.
func TestOverlayLazyLoadsBaseOnlyWhenNeeded(t *testing.T) {
	const sys = "opendatahub"
	loads := 0
	base := func() ([]*preset.Preset, error) {
		loads++
		return []*preset.Preset{
			{Name: "kserve-template", Namespace: sys, Spec: &v1alpha2.LLMInferenceServiceSpec{}},
			{Name: "kserve-scheduler", Namespace: sys, Spec: &v1alpha2.LLMInferenceServiceSpec{}},
		}, nil
	}
	top := []*preset.Preset{
		{Name: "kserve-template", Namespace: sys, File: "chart.yaml", Spec: &v1alpha2.LLMInferenceServiceSpec{}},
		{Name: "team", Namespace: "team-a", Spec: &v1alpha2.LLMInferenceServiceSpec{}},
	}
	c, err := preset.OverlayLazy(sys, base, top)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.Lookup("kserve-template", "team-a"); err != nil || p.File != "chart.yaml" {
		t.Fatalf("Lookup = %v, %v; want the top preset", p, err)
	}
	if _, err := c.Lookup("team", "team-a"); err != nil {
		t.Fatal(err)
	}
	if loads != 0 {
		t.Fatalf("base loaded %d times while the top presets answered every lookup", loads)
	}
	if _, err := c.Lookup("kserve-scheduler", "team-a"); err != nil {
		t.Fatalf("a base preset: %v", err)
	}
	if _, err := c.Lookup("missing", "team-a"); !errors.Is(err, preset.ErrNotFound) {
		t.Errorf("a missing preset: %v", err)
	}
	var ids []string
	for _, p := range c.All() {
		ids = append(ids, p.ID())
	}
	want := []string{"opendatahub/kserve-scheduler", "opendatahub/kserve-template (chart.yaml)", "team-a/team"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("All (-want +got):\n%s", diff)
	}
	if loads != 1 {
		t.Errorf("base loaded %d times; want once", loads)
	}
}
