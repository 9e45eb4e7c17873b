package controllertest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/internal/migration"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func deployment() client.Object     { return &appsv1.Deployment{} }
func service() client.Object        { return &corev1.Service{} }
func serviceAccount() client.Object { return &corev1.ServiceAccount{} }
func role() client.Object           { return &rbacv1.Role{} }
func roleBinding() client.Object    { return &rbacv1.RoleBinding{} }
func clusterBinding() client.Object { return &rbacv1.ClusterRoleBinding{} }
func route() client.Object          { return &gatewayv1.HTTPRoute{} }
func poolV1() client.Object         { return &gieapiv1.InferencePool{} }
func poolAlpha2() client.Object     { return &gieapixv1alpha2.InferencePool{} }
func secret() client.Object         { return &corev1.Secret{} }

var simulator = simService("sim", managedRouter)

// The router objects of the service sim.
var (
	simEPP     = []string{"sim-kserve-router-scheduler"}
	simEPPSvc  = []string{"sim-epp-service"}
	simEPPRBAC = []string{"sim-epp-sa"}
)

func TestManagedRouteAndGateway(t *testing.T) {
	e := startWithGateway(t)
	e.create(simulator)
	e.waitExists(deployment, "sim-kserve", "sim-kserve-router-scheduler")
	e.waitExists(service, "sim-kserve-workload-svc", "sim-epp-service")
	e.waitExists(route, "sim-kserve-route")
	e.waitExists(poolV1, "sim-inference-pool")
	e.waitExists(secret, "sim-kserve-self-signed-certs")
	e.waitReady("sim")
	// Either pool makes the service ready; the move to v1 follows once the
	// gateway has accepted the v1 pool.
	e.waitCondition("sim", "InferencePoolMigrated", metav1.ConditionTrue, "")
	svc := e.waitReady("sim")
	if want := "http://gw.example.com/" + e.ns + "/sim"; svc.Status.URL != want {
		t.Errorf("url = %q, want %q", svc.Status.URL, want)
	}
	if len(svc.Status.Addresses) != 1 || svc.Status.Addresses[0].Name != "gateway-external" {
		t.Errorf("addresses = %+v, want one gateway-external", svc.Status.Addresses)
	}
	want := v1alpha2.InferencePoolStatus{Name: "sim-inference-pool", Group: "inference.networking.k8s.io", MigrationPhase: "v1"}
	if ip := svc.Status.InferencePool; ip == nil || *ip != want {
		t.Errorf("status.inferencePool = %+v, want %+v", ip, want)
	}
	for _, c := range []string{"MainWorkloadReady", "SchedulerWorkloadReady", "GatewaysReady", "HTTPRoutesReady", "InferencePoolReady", "InferencePoolMigrated", v1alpha2.ConditionPresetsCombined} {
		if got := cond(svc, c); got == nil || got.Status != metav1.ConditionTrue {
			t.Errorf("condition %s = %+v, want True", c, got)
		}
	}
	for _, c := range []string{"WorkerWorkloadReady", "PrefillWorkloadReady", "PrefillWorkerWorkloadReady"} {
		if got := cond(svc, c); got != nil {
			t.Errorf("condition %s = %+v, want none (no such workload)", c, got)
		}
	}
	// The route went to v1 for good: v1 at weight 100, marked.
	rt := &gatewayv1.HTTPRoute{}
	e.must(e.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "sim-kserve-route"}, rt))
	if rt.Annotations["serving.kserve.io/inference-pool-migrated"] != "v1" {
		t.Errorf("route annotations = %v, want the migrated mark", rt.Annotations)
	}
	if w := poolWeights(rt); !slices.Equal(w["inference.networking.k8s.io"], []int32{100}) || !slices.Equal(w["inference.networking.x-k8s.io"], []int32{0}) {
		t.Errorf("route pool weights = %v, want v1 100 and v1alpha2 0", w)
	}
}

// poolWeights lists the distinct weights of the route's InferencePool
// backends by group.
func poolWeights(rt *gatewayv1.HTTPRoute) map[string][]int32 {
	out := map[string][]int32{}
	for _, r := range rt.Spec.Rules {
		for _, b := range r.BackendRefs {
			if b.Kind == nil || *b.Kind != "InferencePool" || b.Group == nil {
				continue
			}
			w := int32(1)
			if b.Weight != nil {
				w = *b.Weight
			}
			if g := string(*b.Group); !slices.Contains(out[g], w) {
				out[g] = append(out[g], w)
			}
		}
	}
	return out
}

// backendNames lists the route's backends as group/kind/name.
func backendNames(rt *gatewayv1.HTTPRoute) []string {
	var out []string
	for _, r := range rt.Spec.Rules {
		for _, b := range r.BackendRefs {
			g, k := "", "Service"
			if b.Group != nil {
				g = string(*b.Group)
			}
			if b.Kind != nil {
				k = string(*b.Kind)
			}
			out = append(out, fmt.Sprintf("%s/%s/%s", g, k, b.Name))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (e *env) route(name string) *gatewayv1.HTTPRoute {
	e.t.Helper()
	rt := &gatewayv1.HTTPRoute{}
	e.must(e.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, rt))
	return rt
}

// userPool creates an InferencePool the user runs.
func (e *env) userPool(name string) {
	e.t.Helper()
	e.must(e.c.Create(context.Background(), &gieapiv1.InferencePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: gieapiv1.InferencePoolSpec{
			Selector:          gieapiv1.LabelSelector{MatchLabels: map[gieapiv1.LabelKey]gieapiv1.LabelValue{"app": "platform"}},
			TargetPorts:       []gieapiv1.Port{{Number: 8000}},
			EndpointPickerRef: gieapiv1.EndpointPickerRef{Name: "platform-epp", Port: &gieapiv1.Port{Number: 9002}},
		},
	}))
}

func TestExternalPoolRef(t *testing.T) {
	e := startWithGateway(t)
	e.userPool("platform-pool")
	// A pool with the managed name that is not the service's: it must not
	// count for readiness, and must not be deleted.
	e.userPool("shared-inference-pool")
	e.poolFilter = func(name string) bool { return name == "shared-inference-pool" }
	e.create(simService("shared", `    route: {}
    gateway: {}
    scheduler:
      pool:
        ref:
          name: platform-pool
`))
	e.waitExists(route, "shared-kserve-route")
	testenv.Eventually(t, "route backends go to the referenced pool", func() error {
		got := backendNames(e.route("shared-kserve-route"))
		if !slices.Contains(got, "inference.networking.k8s.io/InferencePool/platform-pool") || slices.ContainsFunc(got, func(s string) bool { return s == "inference.networking.k8s.io/InferencePool/shared-inference-pool" }) {
			return fmt.Errorf("backends %v", got)
		}
		return nil
	})
	testenv.Eventually(t, "only the referenced pool counts", func() error {
		e.simulate()
		c := cond(e.service("shared"), "InferencePoolReady")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "InferencePoolNotReady" {
			return fmt.Errorf("InferencePoolReady = %+v", c)
		}
		return nil
	})
	e.poolFilter = nil
	svc := e.waitReady("shared")
	if ip := svc.Status.InferencePool; ip == nil || ip.Name != "platform-pool" || ip.Group != "inference.networking.k8s.io" {
		t.Errorf("status.inferencePool = %+v, want platform-pool in inference.networking.k8s.io", ip)
	}
	// The referenced pool exists in the v1 group only: a gateway would
	// report ResolvedRefs=False for a v1alpha2 backend naming it.
	if got := backendNames(e.route("shared-kserve-route")); slices.Contains(got, "inference.networking.x-k8s.io/InferencePool/platform-pool") {
		t.Errorf("backends %v name the referenced pool in inference.networking.x-k8s.io, where it does not exist", got)
	}
	want := "InferencePool platform-pool exists in inference.networking.k8s.io only; the route names it in that group"
	if c := cond(svc, "InferencePoolReady"); c == nil || !strings.Contains(c.Message, want) {
		t.Errorf("InferencePoolReady = %+v, want its message to say %q", c, want)
	}
	if e.exists(deployment(), "shared-kserve-router-scheduler") {
		t.Error("an endpoint picker was made for a referenced pool")
	}
	if !e.exists(poolV1(), "shared-inference-pool") || e.exists(poolAlpha2(), "shared-inference-pool") {
		t.Error("the pools with the managed name: want the user's v1 one kept and no v1alpha2 one made")
	}
}

func TestNoScheduler(t *testing.T) {
	e := startWithGateway(t)
	e.create(simService("small", `    route: {}
    gateway: {}
`))
	e.waitExists(route, "small-kserve-route")
	svc := e.waitReady("small")
	if got := backendNames(e.route("small-kserve-route")); !slices.Equal(got, []string{"/Service/small-kserve-workload-svc"}) {
		t.Errorf("backends = %v, want the workload Service only", got)
	}
	if svc.Status.InferencePool != nil {
		t.Errorf("status.inferencePool = %+v, want none", svc.Status.InferencePool)
	}
	for _, c := range []string{"InferencePoolReady", "SchedulerWorkloadReady", "InferencePoolMigrated"} {
		if cond(svc, c) != nil {
			t.Errorf("condition %s is set; there is no scheduler", c)
		}
	}
	if e.exists(poolV1(), "small-inference-pool") || e.exists(deployment(), "small-kserve-router-scheduler") {
		t.Error("a pool or an endpoint picker exists without a scheduler")
	}
}

func TestUserRouteSpec(t *testing.T) {
	e := startWithGateway(t)
	e.create(simService("sim", `    gateway: {}
    scheduler: {}
    route:
      http:
        spec:
          hostnames:
          - llm.example.com
`))
	svc := e.waitReady("sim")
	rt := e.route("sim-kserve-route")
	if len(rt.Spec.Hostnames) != 1 || rt.Spec.Hostnames[0] != "llm.example.com" {
		t.Errorf("route hostnames = %v, want the user's", rt.Spec.Hostnames)
	}
	if want := "http://llm.example.com/" + e.ns + "/sim"; svc.Status.URL != want {
		t.Errorf("url = %q, want %q", svc.Status.URL, want)
	}
}

// userRoute creates an HTTPRoute the user manages, attached to the
// ingress gateway.
func (e *env) userRoute(name string) {
	e.t.Helper()
	ns := gatewayv1.Namespace(e.sys)
	prefix := gatewayv1.PathMatchPathPrefix
	path := "/" + name
	e.must(e.c.Create(context.Background(), &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kserve-ingress-gateway", Namespace: &ns}}},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "sim-kserve-workload-svc", Port: ptr(gatewayv1.PortNumber(8000))}}}},
			}},
		},
	}))
}

func TestRefsReplaceManagedRoute(t *testing.T) {
	e := startWithGateway(t)
	e.create(simulator)
	e.waitReady("sim")
	e.userRoute("my-route")
	e.update("sim", func(s *v1alpha2.LLMInferenceService) {
		s.Spec.Router.Gateway = nil
		s.Spec.Router.Route = &v1alpha2.GatewayRoutesSpec{HTTP: &v1alpha2.HTTPRouteSpec{Refs: []corev1.LocalObjectReference{{Name: "my-route"}}}}
	})
	e.waitGone(route, "sim-kserve-route")
	svc := e.waitReady("sim")
	if !e.exists(route(), "my-route") {
		t.Error("the user's route is gone")
	}
	if want := "http://gw.example.com/my-route"; svc.Status.URL != want {
		t.Errorf("url = %q, want %q (from the user's route)", svc.Status.URL, want)
	}
}

func TestRouterNilDeletesWhatItOwned(t *testing.T) {
	e := startWithGateway(t)
	e.create(simulator)
	e.waitReady("sim")
	auth := e.eppAuth("sim")
	e.waitExists(clusterBinding, auth)
	e.update("sim", func(s *v1alpha2.LLMInferenceService) { s.Spec.Router = nil })
	e.waitGone(route, "sim-kserve-route")
	e.waitGone(poolV1, "sim-inference-pool")
	e.waitGone(poolAlpha2, "sim-inference-pool")
	e.waitGone(deployment, simEPP...)
	e.waitGone(service, simEPPSvc...)
	e.waitGone(serviceAccount, simEPPRBAC...)
	e.waitGone(role, "sim-epp-role")
	e.waitGone(roleBinding, "sim-epp-rb")
	e.waitGone(clusterBinding, auth)
	svc := e.waitReady("sim")
	want := []v1alpha2.Address{{Name: "internal", URL: "https://sim-kserve-workload-svc." + e.ns + ".svc.cluster.local"}}
	if !reflect.DeepEqual(svc.Status.Addresses, want) || svc.Status.URL != want[0].URL {
		t.Errorf("addresses = %+v url %q, want the workload Service", svc.Status.Addresses, svc.Status.URL)
	}
	for _, c := range []string{"GatewaysReady", "HTTPRoutesReady", "InferencePoolReady", "SchedulerWorkloadReady"} {
		if cond(svc, c) != nil {
			t.Errorf("condition %s is still set after the router was removed", c)
		}
	}
	if !e.exists(deployment(), "sim-kserve") || !e.exists(service(), "sim-kserve-workload-svc") {
		t.Error("the workload went with the router")
	}
}

func TestUnresolvedRefs(t *testing.T) {
	e := startWithGateway(t)
	e.create(simService("refs", `    route:
      http:
        refs:
        - name: missing-route
    scheduler:
      pool:
        ref:
          name: missing-pool
`))
	svc := e.waitCondition("refs", v1alpha2.ConditionRouterReady, metav1.ConditionFalse, "RefsInvalid")
	msg := cond(svc, v1alpha2.ConditionRouterReady).Message
	for _, want := range []string{"HTTPRoute " + e.ns + "/missing-route does not exist", "InferencePool " + e.ns + "/missing-pool does not exist"} {
		if !strings.Contains(msg, want) {
			t.Errorf("RouterReady message %q does not say %q", msg, want)
		}
	}
	if c := cond(svc, v1alpha2.ConditionReady); c.Reason != "RefsInvalid" {
		t.Errorf("Ready reason = %s, want RefsInvalid", c.Reason)
	}
	// The references come to exist: the events of those objects reach the
	// service through the reference indexes.
	e.userRoute("missing-route")
	e.userPool("missing-pool")
	e.waitReady("refs")

	// A gateway in gateway.refs that does not exist.
	e.create(simService("gwrefs", `    route: {}
    gateway:
      refs:
      - name: nowhere
`))
	svc = e.waitCondition("gwrefs", v1alpha2.ConditionRouterReady, metav1.ConditionFalse, "RefsInvalid")
	if msg := cond(svc, v1alpha2.ConditionRouterReady).Message; !strings.Contains(msg, "Gateway "+e.ns+"/nowhere does not exist") {
		t.Errorf("RouterReady message %q does not name the gateway", msg)
	}
	e.gateway(e.ns, "nowhere", "nowhere.example.com")
	svc = e.waitReady("gwrefs")
	if want := "http://nowhere.example.com/" + e.ns + "/gwrefs"; svc.Status.URL != want {
		t.Errorf("url = %q, want %q", svc.Status.URL, want)
	}
}

// TestSchedulerConfigFromConfigMap: a service whose endpoint picker reads
// its configuration from a ConfigMap (spec.router.scheduler.config.ref)
// waits with a condition that names the ConfigMap while it is missing, gets
// the ConfigMap's configuration as --config-text once it exists (one
// shared from the system namespace under a config-scheduler- name too),
// and follows an edit of it at its next reconcile.
func TestSchedulerConfigFromConfigMap(t *testing.T) {
	e := startWithGateway(t)
	ctx := t.Context()
	withConfig := func(name string) string {
		return "    route: {}\n    gateway: {}\n    scheduler:\n      config:\n        ref: {name: " + name + ", key: epp}\n"
	}
	e.create(simService("sim", withConfig("sim-epp")))
	svc := e.waitCondition("sim", v1alpha2.ConditionPresetsCombined, metav1.ConditionFalse, "CombineBaseError")
	if msg := cond(svc, v1alpha2.ConditionPresetsCombined).Message; !strings.Contains(msg, "spec.router.scheduler.config.ref: ConfigMap not found: sim-epp in namespace "+e.ns) {
		t.Errorf("PresetsCombined message %q does not name the missing ConfigMap", msg)
	}
	if e.exists(deployment(), simEPP[0]) {
		t.Error("the endpoint picker was applied without its configuration")
	}

	configMap := func(namespace, name, kind string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Data:       map[string]string{"epp": "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: " + kind + "\n"},
		}
	}
	touch := func(name, value string) {
		e.update(name, func(s *v1alpha2.LLMInferenceService) {
			metav1.SetMetaDataAnnotation(&s.ObjectMeta, "test.example.com/touch", value)
		})
	}
	configText := func(name, want string) {
		testenv.Eventually(t, "the endpoint picker of "+name+" runs "+want, func() error {
			d := &appsv1.Deployment{}
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name + "-kserve-router-scheduler"}, d); err != nil {
				return err
			}
			args := d.Spec.Template.Spec.Containers[0].Args
			if i := slices.Index(args, "--config-text"); i < 0 || i+1 == len(args) || args[i+1] != want {
				return fmt.Errorf("args %q", args)
			}
			return nil
		})
	}
	cm := configMap(e.ns, "sim-epp", "EndpointPickerConfig")
	e.must(e.c.Create(ctx, cm))
	touch("sim", "1") // or wait for the retry of a missing ConfigMap
	configText("sim", `{"apiVersion":"inference.networking.x-k8s.io/v1alpha1","kind":"EndpointPickerConfig"}`)
	e.waitCondition("sim", v1alpha2.ConditionPresetsCombined, metav1.ConditionTrue, "")

	cm.Data["epp"] = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins: [{type: queue-scorer}]\n"
	e.must(e.c.Update(ctx, cm))
	touch("sim", "2") // or wait for the periodic recheck
	configText("sim", `{"apiVersion":"inference.networking.x-k8s.io/v1alpha1","kind":"EndpointPickerConfig","plugins":[{"type":"queue-scorer"}]}`)

	e.must(e.c.Create(ctx, configMap(e.sys, "config-scheduler-shared", "SharedConfig")))
	e.create(simService("shared", withConfig("config-scheduler-shared")))
	configText("shared", `{"apiVersion":"inference.networking.x-k8s.io/v1alpha1","kind":"SharedConfig"}`)
}

// poolRoute creates a route of the user's, attached to the ingress
// gateway, whose one rule sends to the InferencePool pool of group.
func (e *env) poolRoute(name, pool, group string) {
	e.t.Helper()
	ns := gatewayv1.Namespace(e.sys)
	e.must(e.c.Create(context.Background(), &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kserve-ingress-gateway", Namespace: &ns}}},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
				Group: ptr(gatewayv1.Group(group)), Kind: ptr(gatewayv1.Kind("InferencePool")), Name: gatewayv1.ObjectName(pool),
			}}}}}},
		},
	}))
}

// TestUserRoutesMigrate: a service served through the user's route
// (route.http.refs) stays dual while that route sends to the v1alpha2 pool,
// and its status names the backendRef to change; once the user changes it
// to the v1 pool and the gateway resolves it, the service moves to v1 and,
// after the grace period, retires the v1alpha2 pool.
func TestUserRoutesMigrate(t *testing.T) {
	e := startWithGateway(t, func(o *controller.Options) { o.MigrationGracePeriod = 3 * time.Second })
	e.poolRoute("my-route", "sim-inference-pool", "inference.networking.x-k8s.io")
	e.create(simService("sim", `    scheduler: {}
    route:
      http:
        refs:
        - name: my-route
`))
	e.waitReady("sim")
	svc := e.waitCondition("sim", migration.ConditionMigrated, metav1.ConditionFalse, migration.ReasonRouteOnV1Alpha2)
	want := "HTTPRoute " + e.ns + "/my-route rules[0].backendRefs[0] sends to the v1alpha2 InferencePool sim-inference-pool"
	if msg := cond(svc, migration.ConditionMigrated).Message; !strings.Contains(msg, want) {
		t.Errorf("%s message %q does not say %q", migration.ConditionMigrated, msg, want)
	}
	if ip := svc.Status.InferencePool; ip == nil || ip.MigrationPhase != string(convention.PhaseDual) {
		t.Errorf("status.inferencePool %+v, want phase dual", ip)
	}
	e.waitSettled("sim")
	if !e.exists(poolAlpha2(), "sim-inference-pool") {
		t.Error("the v1alpha2 pool the user's route sends to is gone")
	}

	// The user points the route at the v1 pool.
	rt := e.route("my-route")
	rt.Spec.Rules[0].BackendRefs[0].Group = ptr(gatewayv1.Group("inference.networking.k8s.io"))
	e.must(e.c.Update(context.Background(), rt))
	testenv.Eventually(t, "service sim is retired", func() error {
		e.simulate()
		if ip := e.service("sim").Status.InferencePool; ip == nil || ip.MigrationPhase != string(convention.PhaseRetired) {
			return fmt.Errorf("status.inferencePool %+v", ip)
		}
		return nil
	})
	e.waitGone(poolAlpha2, "sim-inference-pool")
	e.waitSettled("sim")
	if c := cond(e.service("sim"), migration.ConditionMigrated); c.Status != metav1.ConditionTrue {
		t.Errorf("%s %+v, want True", migration.ConditionMigrated, c)
	}
}
