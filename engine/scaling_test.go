package engine_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// prometheus is the address the keda goldens' triggers query.
var prometheus = build.Prometheus{URL: "https://thanos-querier.openshift-monitoring.svc.cluster.local:9091"}

// renderScaled renders the one service of testdata/<name>/input.yaml,
// changed by edit, with opts.
func renderScaled(t *testing.T, name string, opts engine.Options, edit func(*v1alpha2.LLMInferenceService)) (*engine.Result, error) {
	t.Helper()
	svc, catalog, shipped := loadCase(t, name)
	svc = svc.DeepCopy()
	if edit != nil {
		edit(svc)
	}
	opts.Images = shipped.Images
	return engine.Render(t.Context(), svc, catalog, opts)
}

// workloadReplicas returns each workload's spec.replicas by name; nil when
// the workload leaves its replicas to an actuator.
func workloadReplicas(res *engine.Result) map[string]*int32 {
	out := map[string]*int32{}
	for _, o := range res.Objects {
		switch w := o.(type) {
		case *appsv1.Deployment:
			out[w.Name] = w.Spec.Replicas
		case *lwsv1.LeaderWorkerSet:
			out[w.Name] = w.Spec.Replicas
		}
	}
	return out
}

// Each scaled workload gets its actuator after the workloads, scaling the
// right workload, and has no replicas of its own; the endpoint picker,
// which is not scaled, keeps its one replica.
func TestScaledWorkloadsGetTheirActuators(t *testing.T) {
	cases := []struct {
		name        string
		actuators   []string
		autoscalers []build.Autoscaler
		unscaled    string
	}{{
		name:      "scaling-single-hpa",
		actuators: []string{"3 autoscaler HorizontalPodAutoscaler qwen-kserve-hpa"},
		autoscalers: []build.Autoscaler{{Kind: build.KindHPA, Name: "qwen-kserve-hpa",
			Target: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "qwen-kserve"}}},
		unscaled: "qwen-kserve-router-scheduler",
	}, {
		name: "scaling-pd-keda",
		actuators: []string{
			"3 autoscaler ScaledObject llama-pd-kserve-keda",
			"3 prefill-autoscaler ScaledObject llama-pd-kserve-prefill-keda",
		},
		autoscalers: []build.Autoscaler{
			{Kind: build.KindScaledObject, Name: "llama-pd-kserve-keda",
				Target: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "llama-pd-kserve"}},
			{Prefill: true, Kind: build.KindScaledObject, Name: "llama-pd-kserve-prefill-keda",
				Target: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "llama-pd-kserve-prefill"}},
		},
		unscaled: "llama-pd-kserve-router-scheduler",
	}, {
		name:      "scaling-lws-keda",
		actuators: []string{"3 autoscaler ScaledObject llama-405b-kserve-keda"},
		autoscalers: []build.Autoscaler{{Kind: build.KindScaledObject, Name: "llama-405b-kserve-keda",
			Target: autoscalingv2.CrossVersionObjectReference{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "llama-405b-kserve-mn"}}},
		unscaled: "llama-405b-kserve-router-scheduler",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := renderScaled(t, tc.name, engine.Options{Prometheus: prometheus}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var actuators []string
			for _, line := range built(res) {
				if strings.Contains(line, "autoscaler ") {
					actuators = append(actuators, line)
				}
			}
			if !slices.Equal(actuators, tc.actuators) {
				t.Errorf("actuators:\n%s\nwant:\n%s", strings.Join(actuators, "\n"), strings.Join(tc.actuators, "\n"))
			}
			if !slices.Equal(res.Autoscalers, tc.autoscalers) {
				t.Errorf("Autoscalers = %+v\nwant %+v", res.Autoscalers, tc.autoscalers)
			}
			replicas := workloadReplicas(res)
			for _, a := range res.Autoscalers {
				r, ok := replicas[a.Target.Name]
				if !ok {
					t.Errorf("%s %s targets %s, which was not built", a.Kind, a.Name, a.Target.Name)
				} else if r != nil {
					t.Errorf("%s has replicas %d; a scaled workload leaves them to %s", a.Target.Name, *r, a.Name)
				}
			}
			if r := replicas[tc.unscaled]; r == nil || *r != 1 {
				t.Errorf("%s (not scaled) has replicas %v, want 1", tc.unscaled, r)
			}
		})
	}
}

// Without KEDA's CRDs the ScaledObject is left out and said to be; the
// workload still leaves its replicas alone, and an HPA is unaffected.
func TestScaledObjectsNeedKEDA(t *testing.T) {
	res, err := renderScaled(t, "scaling-pd-keda", engine.Options{Prometheus: prometheus, WithoutKEDA: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range built(res) {
		if strings.Contains(line, "ScaledObject") {
			t.Errorf("built %s without KEDA", line)
		}
	}
	if len(res.Autoscalers) != 2 {
		t.Fatalf("Autoscalers = %+v, want the two withheld ScaledObjects", res.Autoscalers)
	}
	for _, a := range res.Autoscalers {
		if !strings.Contains(a.Withheld, "keda.sh/v1alpha1 is not served") {
			t.Errorf("%s: Withheld = %q, want it to say KEDA is not served", a.Name, a.Withheld)
		}
	}
	for name, r := range workloadReplicas(res) {
		if r != nil && !strings.HasSuffix(name, "router-scheduler") {
			t.Errorf("%s has replicas %d though it is scaled", name, *r)
		}
	}
	hpa, err := renderScaled(t, "scaling-single-hpa", engine.Options{WithoutKEDA: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hpa.Named(engine.RoleAutoscaler) != "qwen-kserve-hpa" {
		t.Errorf("an HPA is built-in and must not depend on KEDA: %v", built(hpa))
	}
}

// wva.keda queries Prometheus; with no address configured the render fails
// saying where to set it, rather than emitting a trigger that cannot work.
func TestWVAKEDANeedsPrometheus(t *testing.T) {
	_, err := renderScaled(t, "scaling-pd-keda", engine.Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "spec.scaling.wva.keda") || !strings.Contains(err.Error(), "--prometheus-url") {
		t.Fatalf("err = %v; want it to name spec.scaling.wva.keda and --prometheus-url", err)
	}
}

// The actuators go when scaling goes, and when the service is stopped;
// without scaling, replicas are the spec's again.
func TestActuatorsGoWithScaling(t *testing.T) {
	unscaled, err := renderScaled(t, "scaling-single-hpa", engine.Options{}, func(s *v1alpha2.LLMInferenceService) {
		s.Spec.Scaling = nil
		three := int32(3)
		s.Spec.Replicas = &three
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unscaled.Autoscalers) != 0 || unscaled.Named(engine.RoleAutoscaler) != "" {
		t.Errorf("an unscaled service has actuators: %+v", unscaled.Autoscalers)
	}
	if r := workloadReplicas(unscaled)["qwen-kserve"]; r == nil || *r != 3 {
		t.Errorf("qwen-kserve replicas = %v, want the spec's 3", r)
	}
	stopped, err := renderScaled(t, "scaling-pd-keda", engine.Options{Prometheus: prometheus}, func(s *v1alpha2.LLMInferenceService) {
		s.Annotations = map[string]string{convention.AnnotationStop: "true"}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(stopped.Objects) != 0 || len(stopped.Autoscalers) != 0 {
		t.Errorf("a stopped service has %d children and actuators %+v", len(stopped.Objects), stopped.Autoscalers)
	}
}

func TestPrometheusOptionsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		p    build.Prometheus
		want string
	}{
		{build.Prometheus{URL: "prometheus:9090"}, "want an http:// or https:// address"},
		{build.Prometheus{URL: "https://p:9090", AuthModes: "bearer"}, "needs TriggerAuthName"},
		{build.Prometheus{URL: "https://p:9090", TriggerAuthName: "a", TriggerAuthKind: "Secret"}, "TriggerAuthKind"},
	} {
		err := engine.Options{Prometheus: tc.p}.Validate()
		if err == nil || !strings.Contains(err.Error(), "field Prometheus") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want one naming field Prometheus and %q", tc.p, err, tc.want)
		}
	}
	if err := (engine.Options{Prometheus: build.Prometheus{URL: "https://p:9090", AuthModes: "tls", TriggerAuthName: "ca",
		TriggerAuthKind: "ClusterTriggerAuthentication"}}).Validate(); err != nil {
		t.Errorf("valid Prometheus options refused: %v", err)
	}
}

// The controller prepares a service once and builds it for what its watch of
// KEDA's CRD says; WithKEDA turns the ScaledObjects off and on again.
func TestPlanWithKEDA(t *testing.T) {
	plan, _ := prepareCase(t, "scaling-lws-keda")
	for _, served := range []bool{false, true, false} {
		res, err := plan.WithKEDA(served).Build("")
		if err != nil {
			t.Fatal(err)
		}
		got := res.Named(engine.RoleAutoscaler)
		if want := map[bool]string{true: "llama-405b-kserve-keda"}[served]; got != want {
			t.Errorf("KEDA served %v: ScaledObject %q, want %q", served, got, want)
		}
		if withheld := res.Autoscalers[0].Withheld != ""; withheld == served {
			t.Errorf("KEDA served %v: Autoscalers[0].Withheld = %q", served, res.Autoscalers[0].Withheld)
		}
	}
}
