package validation_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/api/validation"
)

func TestValidateKServeExtensions(t *testing.T) {
	tier := func(fs v1alpha2.FileSystemTierSpec) v1alpha2.WorkloadSpec {
		return v1alpha2.WorkloadSpec{KVCacheOffloading: &v1alpha2.KVCacheOffloadingSpec{
			CPU: resource.MustParse("1Gi"), Secondary: []v1alpha2.SecondaryTierSpec{{FileSystem: &fs}},
		}}
	}
	pct := intstr.FromString("25%")
	tests := map[string]struct {
		spec v1alpha2.LLMInferenceServiceSpec
		want string // a substring of the error list; empty means valid
	}{
		"ngram speculator without a model is valid": {spec: v1alpha2.LLMInferenceServiceSpec{KServeExtensions: v1alpha2.KServeExtensions{
			Speculator: &v1alpha2.SpeculatorSpec{Config: map[string]string{"method": "ngram"}}}}},
		"speculator config without method": {spec: v1alpha2.LLMInferenceServiceSpec{KServeExtensions: v1alpha2.KServeExtensions{
			Speculator: &v1alpha2.SpeculatorSpec{Config: map[string]string{"num_speculative_tokens": "3"}}}}, want: "speculator.config.method is required"},
		"a tier on a claim is valid": {spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: tier(v1alpha2.FileSystemTierSpec{
			PVC: &v1alpha2.PVCTierSpec{Ref: &v1alpha2.PVCRefTierSpec{Name: "cache"}}})}},
		"a tier with neither emptyDir nor pvc": {spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: tier(v1alpha2.FileSystemTierSpec{})},
			want: "spec.kvCacheOffloading.secondary[0].fileSystem: Invalid value: \"object\": set exactly one of emptyDir and pvc"},
		"a pvc tier with spec and ref": {spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: tier(v1alpha2.FileSystemTierSpec{
			PVC: &v1alpha2.PVCTierSpec{Ref: &v1alpha2.PVCRefTierSpec{Name: "c"}, Spec: &corev1.PersistentVolumeClaimSpec{}}})},
			want: "set exactly one of spec (a claim per pod) and ref"},
		"a relative mount path": {spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: tier(v1alpha2.FileSystemTierSpec{
			MountPath: "cache", EmptyDir: &v1alpha2.EmptyDirTierSpec{Size: resource.MustParse("1Gi")}})},
			want: "spec.kvCacheOffloading.secondary[0].fileSystem.mountPath: Invalid value: \"cache\""},
		"rollout with a percentage is valid": {spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{
			RolloutStrategy: &v1alpha2.RolloutStrategy{MaxSurge: &pct}}}},
		"rollout over 100%": {spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{
			RolloutStrategy: &v1alpha2.RolloutStrategy{MaxSurge: ptr.To(intstr.FromString("150%"))}}},
			want: "spec.rolloutStrategy.maxSurge: Invalid value: \"150%\""},
		"a scheduler label key that is no label key": {spec: v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{
			Scheduler: &v1alpha2.SchedulerSpec{SchedulerExtensions: v1alpha2.SchedulerExtensions{Labels: map[string]string{"a b": "c"}}}}},
			want: "spec.router.scheduler.labels"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := validation.ValidateService(svc(tc.spec)).ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("want valid, got %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("want an error containing %q, got %v", tc.want, got)
			}
		})
	}
}

func TestUnimplemented(t *testing.T) {
	spec := &v1alpha2.LLMInferenceServiceSpec{
		Model:            v1alpha2.LLMModelSpec{Confidential: &v1alpha2.ConfidentialSpec{Enabled: false}},
		KServeExtensions: v1alpha2.KServeExtensions{RuntimeExtensions: v1alpha2.RuntimeExtensions{TrustRemoteCode: true, Tracing: &v1alpha2.TracingSpec{}}},
		Router: &v1alpha2.RouterSpec{Scheduler: &v1alpha2.SchedulerSpec{SchedulerExtensions: v1alpha2.SchedulerExtensions{
			Config: &v1alpha2.SchedulerConfigSpec{Inline: &runtime.RawExtension{Raw: []byte(`{}`)}},
		}}},
	}
	if got := validation.Unimplemented(spec); len(got) != 0 {
		t.Fatalf("fields odh-serving acts on, or that are off, were warned about: %q", got)
	}
	spec.Model.Confidential.Enabled = true
	spec.Runtime = ptr.To("vllm")
	spec.Router.Route = &v1alpha2.GatewayRoutesSpec{Weight: ptr.To[int32](10)}
	spec.Router.Scheduler.Tokenizer = &v1alpha2.TokenizerSpec{}
	spec.Router.Scheduler.Config = &v1alpha2.SchedulerConfigSpec{Ref: nil}
	got := strings.Join(validation.Unimplemented(spec), "\n")
	for _, f := range []string{"spec.model.confidential", "spec.runtime", "spec.router.route.group", "spec.router.scheduler.tokenizer"} {
		if !strings.Contains(got, f+" is accepted and stored but not acted on") {
			t.Errorf("no warning for %s in:\n%s", f, got)
		}
	}
	if strings.Contains(got, "scheduler.config") {
		t.Errorf("a config without ref was warned about:\n%s", got)
	}
}
