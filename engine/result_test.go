package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
)

// prepareCase prepares the one service of testdata/<name>/input.yaml.
func prepareCase(t *testing.T, name string) (*engine.Plan, *v1alpha2.LLMInferenceService) {
	t.Helper()
	svc, catalog, opts := loadCase(t, name)
	plan, err := engine.Prepare(t.Context(), svc, catalog, opts)
	if err != nil {
		t.Fatal(err)
	}
	return plan, svc
}

// built lists a result's children as "wave role kind name", in order.
func built(res *engine.Result) []string {
	out := make([]string, len(res.Objects))
	for i, o := range res.Objects {
		gvk := o.GetObjectKind().GroupVersionKind()
		out[i] = fmt.Sprintf("%d %s %s %s", res.Children[i].Wave, res.Children[i].Role, gvk.Kind, o.GetName())
	}
	return out
}

// defaultNames are the names of service svc's children, with no
// references in its spec.
func defaultNames(svc string) build.Names {
	return build.Names{
		Deployment: svc + "-kserve", PrefillDeployment: svc + "-kserve-prefill",
		LeaderWorkerSet: svc + "-kserve-mn", PrefillLeaderWorkerSet: svc + "-kserve-mn-prefill",
		WorkloadService: svc + "-kserve-workload-svc",
		Scheduler:       svc + "-kserve-router-scheduler", SchedulerService: svc + "-epp-service",
		Pool: svc + "-inference-pool", Route: svc + "-kserve-route", TLSSecret: svc + "-kserve-self-signed-certs",
		MaaSRoute: svc + "-kserve-maas-route", MaaSRouteAuth: svc + "-kserve-maas-route-authn",
		HPA: svc + "-kserve-hpa", PrefillHPA: svc + "-kserve-prefill-hpa",
		ScaledObject: svc + "-kserve-keda", PrefillScaledObject: svc + "-kserve-prefill-keda",
	}
}

func withPool(n build.Names, pool string) build.Names {
	n.Pool = pool
	return n
}

// TestResultSaysWhatWasBuilt: every child has its role and wave, in apply
// order, and the plan carries the names, whether the service is stopped,
// and the phase it was built for.
func TestResultSaysWhatWasBuilt(t *testing.T) {
	cases := []struct {
		name    string
		want    []string
		names   build.Names
		stopped bool
	}{{
		name: "prefill-decode",
		want: []string{
			"0 rbac ServiceAccount llama-pd-epp-sa",
			"0 rbac ServiceAccount llama-pd-kserve",
			"0 rbac Role llama-pd-epp-role",
			"0 rbac Role llama-pd-kserve-role",
			"1 rbac RoleBinding llama-pd-epp-rb",
			"1 rbac RoleBinding llama-pd-kserve-rb",
			"1 rbac ClusterRoleBinding team-a-llama-pd-c14b51b27741150e-epp-auth-rb",
			"1 scheduler-service Service llama-pd-epp-service",
			"1 workload-service Service llama-pd-kserve-workload-svc",
			"1 network-policy NetworkPolicy llama-pd-kserve",
			"1 network-policy NetworkPolicy llama-pd-kserve-prefill",
			"2 main Deployment llama-pd-kserve",
			"2 prefill Deployment llama-pd-kserve-prefill",
			"2 scheduler Deployment llama-pd-kserve-router-scheduler",
			"3 pool InferencePool llama-pd-inference-pool",
			"3 pool-v1alpha2 InferencePool llama-pd-inference-pool",
			"3 route HTTPRoute llama-pd-kserve-route",
		},
		names: defaultNames("llama-pd"),
	}, {
		name: "pd-dp",
		want: []string{
			"0 rbac ServiceAccount deepseek-pd-epp-sa",
			"0 rbac ServiceAccount deepseek-pd-kserve-mn",
			"0 rbac ServiceAccount deepseek-pd-kserve-mn-prefill",
			"0 rbac Role deepseek-pd-epp-role",
			"0 rbac Role deepseek-pd-kserve-mn-role",
			"1 rbac RoleBinding deepseek-pd-epp-rb",
			"1 rbac RoleBinding deepseek-pd-kserve-mn-rb",
			"1 rbac ClusterRoleBinding team-c-deepseek-pd-95a07fa3a9537da1-epp-auth-rb",
			"1 scheduler-service Service deepseek-pd-epp-service",
			"1 workload-service Service deepseek-pd-kserve-workload-svc",
			"1 network-policy NetworkPolicy deepseek-pd-kserve-mn",
			"1 network-policy NetworkPolicy deepseek-pd-kserve-mn-prefill",
			"2 scheduler Deployment deepseek-pd-kserve-router-scheduler",
			"2 worker LeaderWorkerSet deepseek-pd-kserve-mn",
			"2 prefill-worker LeaderWorkerSet deepseek-pd-kserve-mn-prefill",
			"3 pool InferencePool deepseek-pd-inference-pool",
			"3 pool-v1alpha2 InferencePool deepseek-pd-inference-pool",
			"3 route HTTPRoute deepseek-pd-kserve-route",
		},
		names: defaultNames("deepseek-pd"),
	}, {
		// The user's pool: no pool or endpoint picker is built, and Pool
		// names the referenced one.
		name: "external-pool",
		want: []string{
			"1 workload-service Service shared-kserve-workload-svc",
			"1 network-policy NetworkPolicy shared-kserve",
			"2 main Deployment shared-kserve",
			"3 route HTTPRoute shared-kserve-route",
		},
		names: withPool(defaultNames("shared"), "platform-pool"),
	}, {
		// Stopped: nothing is built, the names are still known (the
		// controller deletes by them) and the spec is still merged.
		name:    "stopped",
		stopped: true,
		names:   defaultNames("paused"),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, _ := prepareCase(t, tc.name)
			res, err := plan.Build("")
			if err != nil {
				t.Fatal(err)
			}
			if got := built(res); !slices.Equal(got, tc.want) {
				t.Errorf("built:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if res.Names != tc.names {
				t.Errorf("Names = %+v, want %+v", res.Names, tc.names)
			}
			if res.Stopped != tc.stopped {
				t.Errorf("Stopped = %v, want %v", res.Stopped, tc.stopped)
			}
			if res.Phase != convention.PhaseV1 {
				t.Errorf("Phase = %q, want the default v1", res.Phase)
			}
			if res.Spec == nil || res.Shape == nil || res.Spec.Model.Name == nil {
				t.Errorf("the merged spec and shape must be set: Spec %v, Shape %v", res.Spec, res.Shape)
			}
			for _, role := range []engine.Role{engine.RoleMain, engine.RoleRoute, engine.RolePool} {
				want := ""
				for i, c := range res.Children {
					if c.Role == role {
						want = res.Objects[i].GetName()
						break
					}
				}
				if got := res.Named(role); got != want {
					t.Errorf("Named(%s) = %q, want %q", role, got, want)
				}
			}
		})
	}
}

// TestWavesFollowTheApplyOrder: Waves groups every object once, the waves
// are in apply order, and what others refer to comes before them.
func TestWavesFollowTheApplyOrder(t *testing.T) {
	plan, _ := prepareCase(t, "prefill-decode")
	res, err := plan.Build("")
	if err != nil {
		t.Fatal(err)
	}
	waves := res.Waves()
	if len(waves) != 4 {
		t.Fatalf("%d waves, want 4", len(waves))
	}
	var seen []int
	for w, idx := range waves {
		for _, i := range idx {
			if res.Children[i].Wave != w {
				t.Errorf("object %d is in wave %d but says %d", i, w, res.Children[i].Wave)
			}
			seen = append(seen, i)
		}
	}
	if len(seen) != len(res.Objects) || !slices.IsSorted(seen) {
		t.Errorf("waves %v must list each of the %d objects once, in apply order", waves, len(res.Objects))
	}
	kinds := func(w int) []string {
		var out []string
		for _, i := range waves[w] {
			out = append(out, res.Objects[i].GetObjectKind().GroupVersionKind().Kind)
		}
		return slices.Compact(out)
	}
	for w, want := range [][]string{
		{"ServiceAccount", "Role"},
		// The RBAC API refuses a binding whose Role does not exist yet.
		{"RoleBinding", "ClusterRoleBinding", "Service", "NetworkPolicy"},
		{"Deployment"},
		{"InferencePool", "HTTPRoute"},
	} {
		if got := kinds(w); !slices.Equal(got, want) {
			t.Errorf("wave %d holds %v, want %v", w, got, want)
		}
	}
}

// TestPlanBuildsEachPhase: one plan builds the pools of each migration
// phase; the names do not depend on it.
func TestPlanBuildsEachPhase(t *testing.T) {
	plan, _ := prepareCase(t, "prefill-decode")
	for _, tc := range []struct {
		phase convention.Phase
		pools []engine.Role
	}{
		{convention.PhaseAlpha2, []engine.Role{engine.RolePoolV1alpha2}},
		{convention.PhaseDual, []engine.Role{engine.RolePool, engine.RolePoolV1alpha2}},
		{convention.PhaseV1, []engine.Role{engine.RolePool, engine.RolePoolV1alpha2}},
		{convention.PhaseRetired, []engine.Role{engine.RolePool}},
	} {
		res, err := plan.Build(tc.phase)
		if err != nil {
			t.Fatal(err)
		}
		var pools []engine.Role
		for _, c := range res.Children {
			if c.Role == engine.RolePool || c.Role == engine.RolePoolV1alpha2 {
				pools = append(pools, c.Role)
			}
		}
		if !slices.Equal(pools, tc.pools) || res.Phase != tc.phase {
			t.Errorf("%s: pools %v (phase %s), want %v", tc.phase, pools, res.Phase, tc.pools)
		}
		if res.Names != plan.Names {
			t.Errorf("%s: names changed with the phase: %+v", tc.phase, res.Names)
		}
	}
}

// TestShapeIsTheServiceWithItsBaseRefs: the shape holds the baseRefs'
// fields but none of the well-known presets'; the merged spec holds both.
func TestShapeIsTheServiceWithItsBaseRefs(t *testing.T) {
	plan, svc := prepareCase(t, "single-node-baserefs")
	if plan.Shape.Model.URI != "hf://meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("shape model.uri %q, want the baseRef's", plan.Shape.Model.URI)
	}
	if c := plan.Shape.Template.Containers; len(c) != 1 || c[0].Image != "" {
		t.Errorf("the shape must not hold the well-known preset's image: %+v", c)
	}
	if c := plan.Spec.Template.Containers; len(c) == 0 || c[0].Image == "" {
		t.Errorf("the merged spec must hold the well-known preset's image: %+v", c)
	}
	shape, err := engine.Shape(svc, presetstest.Catalog(t, nil))
	if err == nil {
		t.Errorf("engine.Shape without the team preset should fail, got %+v", shape)
	}

	plan, svc = prepareCase(t, "prefill-decode")
	if plan.Shape != &svc.Spec {
		t.Error("without baseRefs the shape is the service's own spec")
	}
}

// TestWithPlatform builds one plan for each gateway TLS: the plan itself
// is not changed, the DestinationRules or BackendTLSPolicies and the
// monitors come last (wave 3, after the Services they name; the metrics
// reader's token Secret in wave 0), and a stopped service gets none.
func TestWithPlatform(t *testing.T) {
	plan, svc := prepareCase(t, "cpu-single")
	kinds := func(res *engine.Result, role engine.Role) []string {
		var out []string
		for i, c := range res.Children {
			if c.Role == role {
				want := 3
				if res.Objects[i].GetObjectKind().GroupVersionKind().Kind == "Secret" {
					want = 0 // the token Secret comes with the ServiceAccount it names
				}
				if c.Wave != want {
					t.Errorf("%s %s in wave %d, want %d", res.Objects[i].GetObjectKind().GroupVersionKind().Kind, res.Objects[i].GetName(), c.Wave, want)
				}
				out = append(out, res.Objects[i].GetObjectKind().GroupVersionKind().Kind+"/"+res.Objects[i].GetName())
			}
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		tls        convention.GatewayTLS
		shadow     string
		want, mons []string
	}{
		{convention.GatewayTLSNone, "", nil, nil},
		{convention.GatewayTLSIstio, "", []string{"DestinationRule/sim-kserve-scheduler", "DestinationRule/sim-kserve-workload-svc"}, nil},
		{convention.GatewayTLSIstio, "sim-inference-pool-ip-1", []string{"DestinationRule/sim-kserve-scheduler", "DestinationRule/sim-kserve-shadow-svc", "DestinationRule/sim-kserve-workload-svc"}, nil},
		{convention.GatewayTLSBackendTLSPolicy, "", []string{"BackendTLSPolicy/sim-kserve-scheduler", "BackendTLSPolicy/sim-kserve-workload-svc"},
			[]string{"PodMonitor/sim-kserve-llmisvc-engine", "Secret/sim-kserve-metrics-reader", "ServiceMonitor/sim-kserve-llmisvc-scheduler"}},
	} {
		res, err := plan.WithPlatform(c.tls, c.shadow, c.mons != nil).Build("")
		if err != nil {
			t.Fatal(err)
		}
		if got := kinds(res, engine.RoleGatewayTLS); !slices.Equal(got, c.want) {
			t.Errorf("%s: gateway TLS children %v, want %v", c.tls, got, c.want)
		}
		if got := kinds(res, engine.RoleMonitor); !slices.Equal(got, c.mons) {
			t.Errorf("%s: monitors %v, want %v", c.tls, got, c.mons)
		}
	}
	res, err := plan.Build("")
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(res, engine.RoleGatewayTLS); len(got) > 0 {
		t.Errorf("the plan itself changed: %v", got)
	}

	svc.Annotations = map[string]string{convention.AnnotationStop: "true"}
	stopped, err := engine.Prepare(t.Context(), svc, presetstest.Catalog(t, nil), engine.Options{Images: presetstest.Images(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := stopped.WithPlatform(convention.GatewayTLSIstio, "x", true).Build(""); err != nil || len(res.Objects) > 0 {
		t.Errorf("a stopped service got %d children (%v)", len(res.Objects), err)
	}
}

// TestWithoutDropsRoles: Without leaves out the children of the roles
// named, keeps the others with their waves, and leaves the result alone.
func TestWithoutDropsRoles(t *testing.T) {
	svc := &v1alpha2.LLMInferenceService{}
	svc.Name, svc.Namespace = "open", "team-a"
	svc.Annotations = map[string]string{convention.AnnotationEnableAuth: "false"}
	svc.Spec.Model.URI = "hf://Qwen/Qwen2.5-7B-Instruct"
	svc.Spec.Router = &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}}
	res, err := engine.Render(t.Context(), svc, presetstest.Catalog(t, nil), engine.Options{Images: presetstest.Images(t), Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	all := built(res)
	if !slices.Contains(all, "3 auth AuthPolicy open-kserve-route-authn") || !slices.Contains(all, "3 route HTTPRoute open-kserve-route") {
		t.Fatalf("the case must build a route and its AuthPolicy: %v", all)
	}
	got := built(res.Without(engine.RoleRoute, engine.RoleAuth))
	var want []string
	for _, c := range all {
		if !strings.Contains(c, " route ") && !strings.Contains(c, " auth ") {
			want = append(want, c)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Without(route, auth) = %v, want %v", got, want)
	}
	if again := built(res); !slices.Equal(again, all) {
		t.Errorf("Without changed the result: %v, was %v", again, all)
	}
}
