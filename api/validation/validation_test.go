package validation_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/api/validation"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func svc(spec v1alpha2.LLMInferenceServiceSpec) *v1alpha2.LLMInferenceService {
	return &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: spec}
}

func par(p v1alpha2.ParallelismSpec) v1alpha2.WorkloadSpec {
	return v1alpha2.WorkloadSpec{Parallelism: &p}
}

func TestValidateService(t *testing.T) {
	refs := []corev1.LocalObjectReference{{Name: "my-route"}}
	gwRefs := []v1alpha2.GatewayObjectReference{{UntypedObjectReference: v1alpha2.UntypedObjectReference{Name: "gw", Namespace: "infra"}}}
	tests := map[string]struct {
		spec v1alpha2.LLMInferenceServiceSpec
		want []string // substrings of the error list; none means valid
	}{
		"empty service is valid": {},
		"managed router is valid": {spec: v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{
			Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}, Scheduler: &v1alpha2.SchedulerSpec{},
		}}},
		"data parallel worker is valid": {spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{
			Parallelism: &v1alpha2.ParallelismSpec{Data: ptr.To[int32](16), DataLocal: ptr.To[int32](8), Expert: true},
			Worker:      &corev1.PodSpec{},
		}}},
		"route refs with route spec": {
			spec: v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{HTTP: &v1alpha2.HTTPRouteSpec{Refs: refs, Spec: &gatewayv1.HTTPRouteSpec{}}}}},
			want: []string{"spec.router.route.http.spec: Forbidden: set either route.http.refs"},
		},
		"route refs with managed gateway": {
			spec: v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{HTTP: &v1alpha2.HTTPRouteSpec{Refs: refs}}, Gateway: &v1alpha2.GatewaySpec{}}},
			want: []string{"spec.router.gateway: Forbidden: a managed gateway ({}) cannot be combined with route.http.refs"},
		},
		"route refs with gateway refs is valid": {
			spec: v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{HTTP: &v1alpha2.HTTPRouteSpec{Refs: refs}}, Gateway: &v1alpha2.GatewaySpec{Refs: gwRefs}}},
		},
		"parentRefs with gateway refs": {
			spec: v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{
				Route:   &v1alpha2.GatewayRoutesSpec{HTTP: &v1alpha2.HTTPRouteSpec{Spec: &gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}}}},
				Gateway: &v1alpha2.GatewaySpec{Refs: gwRefs},
			}},
			want: []string{"spec.router.route.http.spec.parentRefs: Forbidden: set either route.http.spec.parentRefs or gateway.refs"},
		},
		"pool ref with pool spec": {
			spec: v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{Scheduler: &v1alpha2.SchedulerSpec{Pool: &v1alpha2.InferencePoolSpec{
				Ref: &corev1.LocalObjectReference{Name: "p"}, Spec: &v1alpha2.PoolSpec{},
			}}}},
			want: []string{"spec.router.scheduler.pool.spec: Forbidden"},
		},
		"worker without parallelism": {
			spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Worker: &corev1.PodSpec{}}},
			want: []string{"spec.parallelism: Required value: a worker needs data parallelism"},
		},
		"prefill worker with tensor parallelism only": {
			spec: v1alpha2.LLMInferenceServiceSpec{Prefill: &v1alpha2.WorkloadSpec{Parallelism: &v1alpha2.ParallelismSpec{Tensor: ptr.To[int32](4)}, Worker: &corev1.PodSpec{}}},
			want: []string{"spec.prefill.parallelism: Required value: a worker needs"},
		},
		"pipeline with data": {
			spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: par(v1alpha2.ParallelismSpec{Pipeline: ptr.To[int32](2), Data: ptr.To[int32](2), DataLocal: ptr.To[int32](1)})},
			want: []string{"spec.parallelism.pipeline: Forbidden: pipeline parallelism cannot be combined with data parallelism"},
		},
		"data without dataLocal": {
			spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: par(v1alpha2.ParallelismSpec{Data: ptr.To[int32](2)})},
			want: []string{"spec.parallelism.dataLocal: Required value: data and dataLocal must be set together"},
		},
		"dataLocal without data in prefill": {
			spec: v1alpha2.LLMInferenceServiceSpec{Prefill: &v1alpha2.WorkloadSpec{Parallelism: &v1alpha2.ParallelismSpec{DataLocal: ptr.To[int32](2)}}},
			want: []string{"spec.prefill.parallelism.data: Required value"},
		},
		"zero and negative sizes": {
			spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: par(v1alpha2.ParallelismSpec{Tensor: ptr.To[int32](0), Pipeline: ptr.To[int32](-1)})},
			want: []string{"spec.parallelism.tensor: Invalid value: 0: must be greater than 0", "spec.parallelism.pipeline: Invalid value: -1: must be greater than 0"},
		},
		"rpc port out of range": {
			spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: par(v1alpha2.ParallelismSpec{Data: ptr.To[int32](2), DataLocal: ptr.To[int32](1), DataRPCPort: ptr.To[int32](70000)})},
			want: []string{"spec.parallelism.dataRPCPort: Invalid value: 70000: must be a port number between 1 and 65535"},
		},
		"worker completed by a baseRef is deferred": {
			spec: v1alpha2.LLMInferenceServiceSpec{
				WorkloadSpec: v1alpha2.WorkloadSpec{Worker: &corev1.PodSpec{}},
				BaseRefs:     []corev1.LocalObjectReference{{Name: "dp-sizes"}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assertErrors(t, validation.ValidateService(svc(tc.spec)).ToAggregate(), tc.want)
		})
	}
}

func TestValidateServiceUpdateKeepsGroupSize(t *testing.T) {
	dp := func(data, local int32) *v1alpha2.LLMInferenceService {
		return svc(v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{
			Parallelism: &v1alpha2.ParallelismSpec{Data: &data, DataLocal: &local}, Worker: &corev1.PodSpec{},
		}})
	}
	assertErrors(t, validation.ValidateServiceUpdate(dp(16, 8), dp(32, 16)).ToAggregate(), nil)
	assertErrors(t, validation.ValidateServiceUpdate(dp(16, 8), dp(32, 8)).ToAggregate(),
		[]string{"spec.parallelism: Invalid value: 4: the multi-node group size may not change (was 2)"})

	withPrefill := svc(v1alpha2.LLMInferenceServiceSpec{Prefill: &v1alpha2.WorkloadSpec{
		Parallelism: &v1alpha2.ParallelismSpec{Pipeline: ptr.To[int32](2)}, Worker: &corev1.PodSpec{},
	}})
	assertErrors(t, validation.ValidateServiceUpdate(withPrefill, svc(v1alpha2.LLMInferenceServiceSpec{})).ToAggregate(),
		[]string{"spec.prefill.parallelism: Invalid value: 1: the multi-node group size may not change (was 2)"})
}

func TestValidateConfig(t *testing.T) {
	cfg := &v1alpha2.LLMInferenceServiceConfig{Spec: v1alpha2.LLMInferenceServiceSpec{
		WorkloadSpec: v1alpha2.WorkloadSpec{Worker: &corev1.PodSpec{}}, // a preset may leave parallelism to the service
	}}
	assertErrors(t, validation.ValidateConfig(cfg).ToAggregate(), nil)
	cfg.Spec.BaseRefs = []corev1.LocalObjectReference{{Name: "other"}}
	assertErrors(t, validation.ValidateConfig(cfg).ToAggregate(), []string{"spec.baseRefs: Forbidden: an LLMInferenceServiceConfig may not reference other configs"})
	assertErrors(t, validation.ValidateMergedSpec(&cfg.Spec).ToAggregate(), []string{"spec.parallelism: Required value: a worker needs"})

	merged := &v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{
		Route: &v1alpha2.GatewayRoutesSpec{HTTP: &v1alpha2.HTTPRouteSpec{Spec: &gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "from-preset"}}},
		}}},
		Gateway: &v1alpha2.GatewaySpec{Refs: []v1alpha2.GatewayObjectReference{{UntypedObjectReference: v1alpha2.UntypedObjectReference{Name: "mine"}}}},
	}}
	assertErrors(t, validation.ValidateMergedSpec(merged).ToAggregate(), nil) // the user's gateway.refs replace the preset's parentRefs
}

func TestDecodeStrictNamesFieldPaths(t *testing.T) {
	tests := map[string]struct {
		json string
		want []string
	}{
		"unknown container field": {
			json: `{"spec":{"template":{"containers":[{"name":"main","imagee":"x"}]}}}`,
			want: []string{`spec.template.containers[0].imagee: Forbidden: unknown field`},
		},
		"wrong type in a port": {
			json: `{"spec":{"template":{"containers":[{"name":"main","ports":[{"containerPort":"http"}]}]}}}`,
			want: []string{`spec.template.containers[0].ports[0].containerPort: Invalid value: "http": must be of type int32, not string`},
		},
		"bad quantity": {
			json: `{"spec":{"prefill":{"template":{"containers":[{"name":"main","resources":{"limits":{"nvidia.com/gpu":"lots"}}}]}}}}`,
			want: []string{`spec.prefill.template.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "lots": quantities must match`},
		},
		"duplicate field": {
			json: `{"spec":{"replicas":1,"replicas":2}}`,
			want: []string{`spec.replicas: Duplicate value`},
		},
		"unknown route field": {
			json: `{"spec":{"router":{"route":{"http":{"spec":{"rulez":[]}}}}}}`,
			want: []string{`spec.router.route.http.spec.rulez: Forbidden: unknown field`},
		},
		"templated strings are fine": {
			json: `{"spec":{"router":{"route":{"http":{"spec":{"rules":[{"matches":[{"path":{"type":"PathPrefix","value":"/{{ .ObjectMeta.Namespace }}/{{ .ObjectMeta.Name }}"}}]}]}}}}}}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assertErrors(t, validation.DecodeStrict([]byte(tc.json), &v1alpha2.LLMInferenceService{}).ToAggregate(), tc.want)
		})
	}
}

func assertErrors(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("want no error, got: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want errors %q, got none", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
}
