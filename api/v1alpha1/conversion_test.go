package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"

	"github.com/opendatahub-io/odh-serving/internal/golden"
)

func kserveStyleService() *v1alpha1.LLMInferenceService {
	crit := v1alpha1.Critical
	return &v1alpha1.LLMInferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: "team-a"},
		Spec: v1alpha1.LLMInferenceServiceSpec{
			Model: v1alpha1.LLMModelSpec{
				URI: "hf://meta-llama/Llama-3.1-8B", Name: ptr.To("llama"), Criticality: &crit,
				LoRA: &v1alpha1.LoRASpec{
					Adapters:   []v1alpha1.LoRAAdapter{{Name: ptr.To("sql"), URI: "hf://team/sql-lora"}},
					LoRALimits: v1alpha2.LoRALimits{MaxRank: ptr.To[int32](32), MaxAdapters: ptr.To[int32](2), MaxCPUAdapters: ptr.To[int32](4)},
				},
			},
			Router: &v1alpha1.RouterSpec{
				Route:   &v1alpha2.GatewayRoutesSpec{},
				Gateway: &v1alpha2.GatewaySpec{},
				Scheduler: &v1alpha1.SchedulerSpec{Pool: &v1alpha1.InferencePoolSpec{Spec: &v1alpha1.GIEInferencePoolSpec{
					Selector:         map[string]string{"app": "llama"},
					TargetPortNumber: ptr.To[int32](8000),
					ExtensionRef: &v1alpha1.Extension{
						Kind: ptr.To("Service"), Name: "llama-epp", PortNumber: ptr.To[int32](9002), FailureMode: ptr.To("FailOpen"),
					},
				}}},
			},
		},
	}
}

// ignoreTypeMeta compares objects built in a test, which have no kind, with
// converted ones, which have theirs.
var ignoreTypeMeta = cmpopts.IgnoreTypes(metav1.TypeMeta{})

// converted is spoke converted to hub (v1alpha2); a failed conversion ends
// the test.
func converted[H conversion.Hub](t *testing.T, spoke conversion.Convertible, hub H) H {
	t.Helper()
	if err := spoke.ConvertTo(hub); err != nil {
		t.Fatalf("convert to v1alpha2: %v", err)
	}
	return hub
}

// convertedBack is hub converted to spoke (v1alpha1); a failed conversion
// ends the test.
func convertedBack[S conversion.Convertible](t *testing.T, hub conversion.Hub, spoke S) S {
	t.Helper()
	if err := spoke.ConvertFrom(hub); err != nil {
		t.Fatalf("convert to v1alpha1: %v", err)
	}
	return spoke
}

func TestConvertToHubMapsPoolShapeAndCriticality(t *testing.T) {
	hub := converted(t, kserveStyleService(), &v1alpha2.LLMInferenceService{})
	if got := hub.Annotations[v1alpha1.AnnotationCriticality]; got != "Critical" {
		t.Errorf("criticality annotation = %q, want Critical", got)
	}
	want := &v1alpha2.PoolSpec{
		Selector:    &v1alpha2.PoolSelector{MatchLabels: map[string]string{"app": "llama"}},
		TargetPorts: []v1alpha2.PoolPort{{Number: 8000}},
		EndpointPickerRef: &v1alpha2.EndpointPickerRef{
			Kind: ptr.To("Service"), Name: "llama-epp", Port: &v1alpha2.PoolPort{Number: 9002}, FailureMode: ptr.To("FailOpen"),
		},
	}
	if diff := cmp.Diff(want, hub.Spec.Router.Scheduler.Pool.Spec); diff != "" {
		t.Errorf("pool spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(golden.JSON(t, kserveStyleService().Spec.Model.LoRA), golden.JSON(t, hub.Spec.Model.LoRA)); diff != "" {
		t.Errorf("lora (-want +got):\n%s", diff)
	}
	back := convertedBack(t, hub, &v1alpha1.LLMInferenceService{})
	if diff := cmp.Diff(kserveStyleService(), back, ignoreTypeMeta); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func multiPortHub() *v1alpha2.LLMInferenceService {
	return &v1alpha2.LLMInferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: "team-a"},
		Spec: v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{Scheduler: &v1alpha2.SchedulerSpec{
			Pool: &v1alpha2.InferencePoolSpec{Spec: &v1alpha2.PoolSpec{
				Selector:    &v1alpha2.PoolSelector{},
				TargetPorts: []v1alpha2.PoolPort{{Number: 8000}, {Number: 8001}, {Number: 8002}},
			}},
		}}},
	}
}

func TestConvertFromHubStashesWhatV1alpha1CannotHold(t *testing.T) {
	spoke := convertedBack(t, multiPortHub(), &v1alpha1.LLMInferenceService{})
	stash := spoke.Annotations[v1alpha1.AnnotationConversionPoolSpec]
	if !strings.Contains(stash, `"number":8002`) || !strings.Contains(stash, `"selector":{}`) {
		t.Errorf("stash annotation = %q, want every target port and the empty selector", stash)
	}
	if got := *spoke.Spec.Router.Scheduler.Pool.Spec.TargetPortNumber; got != 8000 {
		t.Errorf("targetPortNumber = %d, want the first port 8000", got)
	}

	hub := converted(t, spoke, &v1alpha2.LLMInferenceService{})
	if diff := cmp.Diff(multiPortHub(), hub, ignoreTypeMeta); diff != "" {
		t.Errorf("restored hub (-want +got):\n%s", diff)
	}
}

func TestConvertToHubIgnoresStashAfterV1alpha1Edit(t *testing.T) {
	spoke := convertedBack(t, multiPortHub(), &v1alpha1.LLMInferenceService{})
	spoke.Spec.Router.Scheduler.Pool.Spec.TargetPortNumber = ptr.To[int32](9000)

	hub := converted(t, spoke, &v1alpha2.LLMInferenceService{})
	if diff := cmp.Diff([]v1alpha2.PoolPort{{Number: 9000}}, hub.Spec.Router.Scheduler.Pool.Spec.TargetPorts); diff != "" {
		t.Errorf("the user's edit must win over the stash (-want +got):\n%s", diff)
	}
	if _, ok := hub.Annotations[v1alpha1.AnnotationConversionPoolSpec]; ok {
		t.Error("the stash annotation must not reach the stored object")
	}
}

func TestConvertToHubRejectsCorruptStash(t *testing.T) {
	spoke := kserveStyleService()
	spoke.Annotations = map[string]string{v1alpha1.AnnotationConversionPoolSpec: "{not json"}
	err := spoke.ConvertTo(&v1alpha2.LLMInferenceService{})
	if err == nil || !strings.Contains(err.Error(), "team-a/llama") || !strings.Contains(err.Error(), v1alpha1.AnnotationConversionPoolSpec) {
		t.Fatalf("error = %v, want one naming the object and the annotation", err)
	}
}

func TestConfigConvertsLikeService(t *testing.T) {
	cfg := &v1alpha1.LLMInferenceServiceConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "kserve-config-llm-template"},
		Spec: v1alpha1.LLMInferenceServiceSpec{
			WorkloadSpec: v1alpha2.WorkloadSpec{Template: &corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Args: []string{"--served-model-name", "{{ .Spec.Model.Name }}"},
			}}}},
		},
	}
	back := convertedBack(t, converted(t, cfg, &v1alpha2.LLMInferenceServiceConfig{}), &v1alpha1.LLMInferenceServiceConfig{})
	if diff := cmp.Diff(cfg, back, ignoreTypeMeta); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// spec.scaling and spec.prefill.scaling have one shape in both versions and
// pass through conversion as written, both ways.
func TestScalingRoundTrips(t *testing.T) {
	scaling := func(s v1alpha2.ScalingSpec) *v1alpha2.ScalingSpec { return &s }
	in := kserveStyleService()
	in.Spec.Scaling = scaling(v1alpha2.ScalingSpec{
		MinReplicas: ptr.To[int32](2), MaxReplicas: 8,
		WVA: &v1alpha2.WVASpec{VariantCost: "12.5", ActuatorSpec: v1alpha2.ActuatorSpec{KEDA: &v1alpha2.KEDAScalingSpec{
			PollingInterval: ptr.To[int32](5), IdleReplicaCount: ptr.To[int32](0),
			Fallback: &v1alpha2.KEDAFallback{FailureThreshold: 3, Replicas: 2},
		}}},
	})
	in.Spec.Prefill = &v1alpha2.WorkloadSpec{Scaling: scaling(v1alpha2.ScalingSpec{
		MaxReplicas: 4,
		WVA:         &v1alpha2.WVASpec{ActuatorSpec: v1alpha2.ActuatorSpec{KEDA: &v1alpha2.KEDAScalingSpec{CooldownPeriod: ptr.To[int32](30)}}},
	})}
	hub := converted(t, in, &v1alpha2.LLMInferenceService{})
	if diff := cmp.Diff(in.Spec.Scaling, hub.Spec.Scaling); diff != "" {
		t.Errorf("spec.scaling in v1alpha2 (-v1alpha1 +v1alpha2):\n%s", diff)
	}
	if diff := cmp.Diff(in.Spec.Prefill, hub.Spec.Prefill); diff != "" {
		t.Errorf("spec.prefill in v1alpha2 (-v1alpha1 +v1alpha2):\n%s", diff)
	}
	back := convertedBack(t, hub, &v1alpha1.LLMInferenceService{})
	if diff := cmp.Diff(in.Spec, back.Spec); diff != "" {
		t.Errorf("v1alpha1 -> v1alpha2 -> v1alpha1 (-in +out):\n%s", diff)
	}
}

// TestKServeExtensionsRoundTrip converts a KServe-style v1alpha1 service
// using every field KServe added beyond the model, the workloads and the
// router, and KServe's status, to v1alpha2 and back, as the conversion
// webhook does (JSON to JSON): the hub must hold each field, in v1alpha2's
// types, and the way back must give the input again.
func TestKServeExtensionsRoundTrip(t *testing.T) {
	data := golden.Read(t, "testdata/kserve-extensions.yaml")
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	in, err := v1alpha1.DecodeObject(js)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := v1alpha1.DecodeObject(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.ToHub(obj); err != nil {
		t.Fatal(err)
	}
	hubJSON := golden.JSON(t, obj)
	// The status's conditions carry knative's severity, which the CRD keeps
	// and metav1.Condition lacks: decode the rest strictly.
	for _, c := range obj["status"].(map[string]any)["conditions"].([]any) {
		delete(c.(map[string]any), "severity")
	}
	hub := &v1alpha2.LLMInferenceService{}
	if err := yaml.UnmarshalStrict([]byte(golden.JSON(t, obj)), hub); err != nil {
		t.Fatalf("strict decode of the converted object into v1alpha2: %v", err)
	}
	s, st := hub.Spec, hub.Status
	adapters := s.Model.LoRA.Adapters
	checks := map[string]bool{
		"spec.storageInitializer.enabled": s.StorageInitializer != nil && *s.StorageInitializer.Enabled,
		"spec.tracing.samplerArg":         s.Tracing != nil && *s.Tracing.SamplerArg == "0.1",
		"spec.speculator.config.method":   s.Speculator != nil && s.Speculator.Config["method"] == "eagle3",
		"spec.speculator.model.uri":       s.Speculator != nil && s.Speculator.Model.URI == "hf://RedHatAI/Qwen3-8B-speculator.eagle3",
		"spec.kvCacheOffloading.secondary": s.KVCacheOffloading != nil && len(s.KVCacheOffloading.Secondary) == 3 &&
			s.KVCacheOffloading.Secondary[1].FileSystem.PVC.Spec.Resources.Requests.Storage().String() == "200Gi",
		"spec.rolloutStrategy.maxSurge":             s.RolloutStrategy != nil && s.RolloutStrategy.MaxSurge.String() == "25%",
		"spec.model.confidential.resourceId":        s.Model.Confidential != nil && *s.Model.Confidential.ResourceId == "kbs:///default/key/qwen",
		"spec.model.lora.adapters[0].confidential":  len(adapters) == 2 && *adapters[0].Confidential.ResourceId == "kbs:///default/key/sql",
		"spec.model.lora.adapters[1].lora":          len(adapters) == 2 && *adapters[1].LoRA.Adapters[0].Name == "nested",
		"spec.runtime":                              s.Runtime != nil && *s.Runtime == "vllm-cuda",
		"spec.trustRemoteCode":                      s.TrustRemoteCode,
		"spec.router.route.group":                   *s.Router.Route.Group == "qwen-family" && *s.Router.Route.Weight == 80,
		"spec.router.scheduler.replicas":            *s.Router.Scheduler.Replicas == 2,
		"spec.router.scheduler.config.inline":       strings.Contains(string(s.Router.Scheduler.Config.Inline.Raw), "queue-scorer"),
		"spec.router.scheduler.tokenizer":           s.Router.Scheduler.Tokenizer.Template.Containers[0].Name == "main",
		"spec.router.scheduler.tracing":             *s.Router.Scheduler.Tracing.ServiceName == "qwen-scheduler",
		"status.addresses[0].origin":                len(st.Addresses) == 1 && st.Addresses[0].Origin.Name == "openshift-ai-inference",
		"status.router.group.members[0].backendRef": st.Router != nil && *st.Router.Group.Members[0].BackendRef.Port == 8000,
		"status.workloads.scheduler.readyReplicas":  st.Workloads != nil && *st.Workloads.Scheduler.ReadyReplicas == 2,
		"status.appliedConfigs[1].source":           len(st.AppliedConfigs) == 2 && st.AppliedConfigs[1].Source == "UserRef",
		"metadata.annotations (criticality)": hub.Annotations[v1alpha1.AnnotationCriticality] == "Critical" &&
			hub.Annotations[v1alpha1.AnnotationConversionCriticality] ==
				`{"model.lora.adapters.0":"Sheddable","model.lora.adapters.1.lora.adapters.0":"Standard","speculator.model":"Standard"}`,
	}
	for field, ok := range checks {
		if !ok {
			t.Errorf("%s did not reach v1alpha2", field)
		}
	}
	back, err := v1alpha1.DecodeObject([]byte(hubJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.FromHub(back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(golden.JSON(t, in), golden.JSON(t, back)); diff != "" {
		t.Errorf("v1alpha1 -> v1alpha2 -> v1alpha1 changed the object (-in +back):\n%s", diff)
	}
}
