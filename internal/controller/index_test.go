package controller

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/presets"
)

// builderIndexer registers indexes with a fake client builder.
type builderIndexer struct{ b *fake.ClientBuilder }

func (i builderIndexer) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	i.b.WithIndex(obj, field, fn)
	return nil
}

func svcWith(ns, name string, spec v1alpha2.LLMInferenceServiceSpec) *v1alpha2.LLMInferenceService {
	return &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func refs(names ...string) []corev1.LocalObjectReference {
	var out []corev1.LocalObjectReference
	for _, n := range names {
		out = append(out, corev1.LocalObjectReference{Name: n})
	}
	return out
}

// TestForConfig: a preset event reaches the services that use it and no
// others, without rendering every service.
func TestForConfig(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	const sys = "sys"
	routed := &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}}
	pipeline := int32(2)
	objs := []client.Object{
		svcWith("a", "user", v1alpha2.LLMInferenceServiceSpec{BaseRefs: refs("team-preset")}),
		svcWith("a", "plain", v1alpha2.LLMInferenceServiceSpec{}),
		svcWith("a", "routed", v1alpha2.LLMInferenceServiceSpec{Router: routed}),
		svcWith("a", "shaped", v1alpha2.LLMInferenceServiceSpec{BaseRefs: refs("pipeline-preset")}),
		svcWith("b", "other-user", v1alpha2.LLMInferenceServiceSpec{BaseRefs: refs("team-preset")}),
		svcWith("b", "routed-b", v1alpha2.LLMInferenceServiceSpec{Router: routed}),
		// The baseRef gives this service its worker: its well-known preset
		// is the pipeline-parallel one, not the single-node template.
		&v1alpha2.LLMInferenceServiceConfig{ObjectMeta: metav1.ObjectMeta{Namespace: sys, Name: "pipeline-preset"},
			Spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{
				Parallelism: &v1alpha2.ParallelismSpec{Pipeline: &pipeline}, Worker: &corev1.PodSpec{},
			}}},
		&v1alpha2.LLMInferenceServiceConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "team-preset"}},
		&v1alpha2.LLMInferenceServiceConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "team-preset"}},
	}
	opts := Options{Options: engine.Options{SystemNamespace: sys}}.withDefaults()
	r := &Reconciler{opts: opts}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	if err := r.indexServices(t.Context(), builderIndexer{b}); err != nil {
		t.Fatal(err)
	}
	r.client = b.Build()
	builtin, err := presets.Load(sys, preset.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	r.presets = &presetCache{reader: r.client, systemNamespace: sys, builtin: builtin}

	for name, tc := range map[string]struct {
		ns, config string
		want       []string
	}{
		"namespace-local baseRef":         {"a", "team-preset", []string{"a/user"}},
		"system baseRef":                  {sys, "team-preset", []string{"a/user", "b/other-user"}},
		"system route preset":             {sys, "kserve-config-llm-router-route", []string{"a/routed", "b/routed-b"}},
		"namespace-local route preset":    {"b", "kserve-config-llm-router-route", []string{"b/routed-b"}},
		"single-node template":            {sys, "kserve-config-llm-template", []string{"a/plain", "a/routed", "a/user", "b/other-user", "b/routed-b"}},
		"shape from a baseRef":            {sys, "kserve-config-llm-worker-pipeline-parallel", []string{"a/shaped"}},
		"a preset nothing uses":           {sys, "kserve-config-llm-scheduler", nil},
		"unrelated name in the namespace": {"a", "elsewhere", nil},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := &v1alpha2.LLMInferenceServiceConfig{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: tc.config}}
			var got []string
			for _, req := range r.forConfig(t.Context(), cfg) {
				got = append(got, req.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("requeued %v, want %v", got, tc.want)
			}
		})
	}
}
