package v1alpha1_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/randfill"

	"github.com/opendatahub-io/odh-serving/api/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// FuzzRoundTrip fills random services and presets of each version, sends them
// through JSON and conversion the way the conversion webhook does, and
// requires the JSON that comes back to be the JSON that went in.
//
// Run it longer with: go test ./api/v1alpha1 -run '^$' -fuzz FuzzRoundTrip -fuzztime 2m
func FuzzRoundTrip(f *testing.F) {
	for seed := range int64(8) {
		f.Add([]byte{byte(seed), 1, 2, 3, 4, 5, 6, 7, 8})
	}
	f.Add([]byte("multi-port pool spec with an empty selector"))
	f.Fuzz(func(t *testing.T, data []byte) {
		filler := newFiller(data)

		var hubSvc v1alpha2.LLMInferenceService
		filler.Fill(&hubSvc)
		hubSvc.TypeMeta = metav1.TypeMeta{APIVersion: "serving.kserve.io/v1alpha2", Kind: "LLMInferenceService"}
		delete(hubSvc.Annotations, v1alpha1.AnnotationConversionPoolSpec) // the webhook rejects it on v1alpha2
		roundTripHub(t, &hubSvc, newHubSvc, newSpokeSvc)

		var hubCfg v1alpha2.LLMInferenceServiceConfig
		filler.Fill(&hubCfg)
		hubCfg.TypeMeta = metav1.TypeMeta{APIVersion: "serving.kserve.io/v1alpha2", Kind: "LLMInferenceServiceConfig"}
		delete(hubCfg.Annotations, v1alpha1.AnnotationConversionPoolSpec)
		roundTripHub(t, &hubCfg, newHubCfg, newSpokeCfg)

		var spokeSvc v1alpha1.LLMInferenceService
		filler.Fill(&spokeSvc)
		spokeSvc.TypeMeta = metav1.TypeMeta{APIVersion: "serving.kserve.io/v1alpha1", Kind: "LLMInferenceService"}
		delete(spokeSvc.Annotations, v1alpha1.AnnotationCriticality) // the webhook rejects these on v1alpha1
		delete(spokeSvc.Annotations, v1alpha1.AnnotationConversionCriticality)
		delete(spokeSvc.Annotations, v1alpha1.AnnotationConversionPoolSpec)
		roundTripSpoke(t, &spokeSvc, newHubSvc, newSpokeSvc)

		var spokeCfg v1alpha1.LLMInferenceServiceConfig
		filler.Fill(&spokeCfg)
		spokeCfg.TypeMeta = metav1.TypeMeta{APIVersion: "serving.kserve.io/v1alpha1", Kind: "LLMInferenceServiceConfig"}
		delete(spokeCfg.Annotations, v1alpha1.AnnotationCriticality)
		delete(spokeCfg.Annotations, v1alpha1.AnnotationConversionCriticality)
		delete(spokeCfg.Annotations, v1alpha1.AnnotationConversionPoolSpec)
		roundTripSpoke(t, &spokeCfg, newHubCfg, newSpokeCfg)
	})
}

func newHubSvc() conversion.Hub           { return &v1alpha2.LLMInferenceService{} }
func newHubCfg() conversion.Hub           { return &v1alpha2.LLMInferenceServiceConfig{} }
func newSpokeSvc() conversion.Convertible { return &v1alpha1.LLMInferenceService{} }
func newSpokeCfg() conversion.Convertible { return &v1alpha1.LLMInferenceServiceConfig{} }

// toSpoke converts a v1alpha2 object into a v1alpha1 one; toHub the other way.
func toSpoke(h conversion.Hub, s conversion.Convertible) error { return s.ConvertFrom(h) }
func toHub(s conversion.Convertible, h conversion.Hub) error   { return s.ConvertTo(h) }

// roundTripHub checks v1alpha2 -> JSON -> v1alpha1 -> JSON -> v1alpha2.
func roundTripHub(t *testing.T, in conversion.Hub, newHub func() conversion.Hub, newSpoke func() conversion.Convertible) {
	t.Helper()
	roundTrip(t, "v1alpha2 -> v1alpha1 -> v1alpha2", in, newHub, newSpoke, toSpoke, toHub)
}

// roundTripSpoke checks v1alpha1 -> JSON -> v1alpha2 -> JSON -> v1alpha1.
func roundTripSpoke(t *testing.T, in conversion.Convertible, newHub func() conversion.Hub, newSpoke func() conversion.Convertible) {
	t.Helper()
	roundTrip(t, "v1alpha1 -> v1alpha2 -> v1alpha1", in, newSpoke, newHub, toHub, toSpoke)
}

// roundTrip sends in through JSON, converts it with there, sends the result
// through JSON and converts it back, as the API server and the conversion
// webhook do, and requires the JSON of what comes back to be in's.
func roundTrip[In, Via any](t *testing.T, trip string, in In, newIn func() In, newVia func() Via, there func(In, Via) error, back func(Via, In) error) {
	t.Helper()
	want := newIn()
	jsonCopy(t, in, want)
	via := newVia()
	if err := there(want, via); err != nil {
		t.Fatalf("%s: convert there: %v", trip, err)
	}
	viaCopy := newVia()
	jsonCopy(t, via, viaCopy)
	got := newIn()
	if err := back(viaCopy, got); err != nil {
		t.Fatalf("%s: convert back: %v", trip, err)
	}
	if diff := cmp.Diff(golden.JSON(t, want), golden.JSON(t, got)); diff != "" {
		t.Fatalf("%s lost data (-want +got):\n%s", trip, diff)
	}
}

// jsonCopy sends in through JSON into out, as the API server and the
// webhook do, so that only what JSON keeps is compared.
func jsonCopy(t *testing.T, in, out any) {
	t.Helper()
	if err := json.Unmarshal([]byte(golden.JSON(t, in)), out); err != nil {
		t.Fatalf("decode: %v", err)
	}
}

// newFiller fills objects with values that survive JSON the way the API
// server's own values do: times to the second, parseable quantities,
// well-formed managed fields.
func newFiller(data []byte) *randfill.Filler {
	return randfill.NewFromGoFuzz(data).NilChance(0.5).NumElements(0, 2).MaxDepth(8).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(int64(c.Uint64()%100000), resource.DecimalSI)
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(int32(c.Uint64() % 65536))
			} else {
				*v = intstr.FromString(c.String(8))
			}
		},
		func(tm *metav1.Time, c randfill.Continue) {
			*tm = metav1.NewTime(time.Unix(int64(c.Uint64()%4_000_000_000), 0).UTC())
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			// spec.router.scheduler.config.inline: any JSON object.
			data, _ := json.Marshal(map[string]any{c.String(8): c.String(8), "n": c.Uint64() % 1000})
			*r = runtime.RawExtension{Raw: data}
		},
		func(e *metav1.ManagedFieldsEntry, c randfill.Continue) {
			*e = metav1.ManagedFieldsEntry{Manager: c.String(8), Operation: metav1.ManagedFieldsOperationApply}
		},
	)
}
