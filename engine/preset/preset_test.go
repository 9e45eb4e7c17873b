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
