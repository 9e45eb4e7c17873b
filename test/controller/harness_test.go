package controllertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// env is one test's controller, namespace and system namespace.
type env struct {
	t    testing.TB
	ns   string
	sys  string
	c    client.Client
	rec  *testenv.Recorder
	opts controller.Options
	stop func()
	// poolFilter, when set, limits the pools simulatePools accepts.
	poolFilter func(name string) bool
	// cfg, when set, is the API server the controller talks to instead of
	// the package's control plane (c should reach the same one).
	cfg *rest.Config
	// wrap, when set, wraps the controller's transport, outside the
	// recorder: a test can answer some requests itself.
	wrap transport.WrapperFunc
	// catalog and images render the env's services like the controller
	// (renderedChildren fills them).
	catalog *preset.Catalog
	images  map[string]string
}

// start runs a controller for a new namespace, with a new system
// namespace that holds the ingress gateway.
func start(t *testing.T, mods ...func(*controller.Options)) *env {
	t.Helper()
	e := newEnv(t, mods...)
	e.run()
	return e
}

// newEnv is start without running the controller.
func newEnv(tb testing.TB, mods ...func(*controller.Options)) *env {
	tb.Helper()
	nodes.Need(tb)
	e := &env{t: tb, c: cp.Client, rec: &testenv.Recorder{}}
	e.ns = testenv.NewNamespace(tb, cp.Client, "t")
	e.sys = testenv.NewNamespace(tb, cp.Client, "sys")
	e.opts = controller.Options{
		Options: engine.Options{SystemNamespace: e.sys, AllowedHostnames: allowedHostnames}, WatchNamespaces: []string{e.ns}, DisableWebhooks: true,
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", MigrationGracePeriod: time.Hour,
	}
	for _, m := range mods {
		m(&e.opts)
	}
	return e
}

// startWithGateway is start with the platform's ingress gateway in the
// system namespace, programmed, at gw.example.com.
func startWithGateway(t *testing.T, mods ...func(*controller.Options)) *env {
	t.Helper()
	e := start(t, mods...)
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	return e
}

// simService is a CPU-simulator service named name; router is the YAML of
// spec.router, indented by four spaces, or empty for none.
func simService(name, router string) string {
	doc := fmt.Sprintf(`
metadata:
  name: %s
spec:
  model:
    name: Qwen/Qwen2.5-0.5B-Instruct
  baseRefs:
  - name: kserve-config-llm-cpu-simulator
`, name)
	if router != "" {
		doc += "  router:\n" + router
	}
	return doc
}

// managedRouter asks for a managed route, gateway and scheduler.
const managedRouter = `    route: {}
    gateway: {}
    scheduler: {}
`

// run starts the controller; stop stops it.
func (e *env) run() {
	e.t.Helper()
	base := cp.Config
	if e.cfg != nil {
		base = e.cfg
	}
	cfg, opts := e.rec.Config(base), e.opts
	if e.wrap != nil {
		cfg.Wrap(e.wrap)
	}
	e.stop = testenv.Start(e.t, "controller", func(ctx context.Context) error { return controller.Run(ctx, cfg, opts) })
}

// create decodes a YAML service or preset into the test namespace.
func (e *env) create(doc string) *v1alpha2.LLMInferenceService {
	e.t.Helper()
	svc := e.decode(doc)
	if err := e.c.Create(context.Background(), svc); err != nil {
		e.t.Fatalf("create service %s: %v", svc.Name, err)
	}
	return svc
}

func (e *env) createConfig(namespace, doc string) *v1alpha2.LLMInferenceServiceConfig {
	e.t.Helper()
	cfg := &v1alpha2.LLMInferenceServiceConfig{}
	if err := yaml.UnmarshalStrict([]byte(doc), cfg); err != nil {
		e.t.Fatalf("decode config: %v", err)
	}
	cfg.Namespace = namespace
	if err := e.c.Create(context.Background(), cfg); err != nil {
		e.t.Fatalf("create config %s: %v", cfg.Name, err)
	}
	return cfg
}

func (e *env) service(name string) *v1alpha2.LLMInferenceService {
	e.t.Helper()
	svc := &v1alpha2.LLMInferenceService{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, svc); err != nil {
		e.t.Fatalf("get service %s: %v", name, err)
	}
	return svc
}

// update changes a service, retrying on conflicts.
func (e *env) update(name string, change func(*v1alpha2.LLMInferenceService)) {
	e.t.Helper()
	for {
		svc := e.service(name)
		change(svc)
		err := e.c.Update(context.Background(), svc)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			e.t.Fatalf("update service %s: %v", name, err)
		}
	}
}

// eppAuth is the name of the endpoint picker's ClusterRoleBinding of the
// service name in the test namespace; simMetricsReaderAuth, the metrics
// reader's of the service sim.
func (e *env) eppAuth(name string) string   { return e.clusterName(name, 0) }
func (e *env) simMetricsReaderAuth() string { return e.clusterName("sim", 1) }

func (e *env) clusterName(name string, i int) string {
	e.t.Helper()
	names, err := build.ClusterNames(e.ns, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return names[i]
}

// exists reports whether obj's kind has an object called name in the
// test namespace (or cluster-wide for cluster-scoped kinds).
func (e *env) exists(obj client.Object, name string) bool {
	e.t.Helper()
	ns := e.ns
	if _, ok := obj.(interface{ GetSubjects() }); ok {
		ns = ""
	}
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatalf("get %T %s: %v", obj, name, err)
	}
	return err == nil
}

// waitExists waits until every named object exists; waitGone until none does.
func (e *env) waitExists(obj func() client.Object, names ...string) {
	e.t.Helper()
	for _, n := range names {
		testenv.Eventually(e.t, fmt.Sprintf("%T %s exists", obj(), n), func() error {
			if !e.exists(obj(), n) {
				return fmt.Errorf("not found")
			}
			return nil
		})
	}
}

func (e *env) waitGone(obj func() client.Object, names ...string) {
	e.t.Helper()
	for _, n := range names {
		testenv.Eventually(e.t, fmt.Sprintf("%T %s is deleted", obj(), n), func() error {
			if e.exists(obj(), n) {
				return fmt.Errorf("still there")
			}
			return nil
		})
	}
}

func cond(svc *v1alpha2.LLMInferenceService, t string) *metav1.Condition {
	return meta.FindStatusCondition(svc.Status.Conditions, t)
}

// waitCondition waits until the service's condition has status and, if
// given, reason.
func (e *env) waitCondition(name, t string, status metav1.ConditionStatus, reason string) *v1alpha2.LLMInferenceService {
	e.t.Helper()
	var svc *v1alpha2.LLMInferenceService
	testenv.Eventually(e.t, fmt.Sprintf("service %s condition %s=%s %s", name, t, status, reason), func() error {
		svc = e.service(name)
		c := cond(svc, t)
		switch {
		case c == nil:
			return fmt.Errorf("no condition %s; conditions: %v", t, svc.Status.Conditions)
		case c.Status != status || (reason != "" && c.Reason != reason):
			return fmt.Errorf("%s=%s reason %s: %s", t, c.Status, c.Reason, c.Message)
		case c.ObservedGeneration != svc.Generation:
			return fmt.Errorf("condition observedGeneration %d, generation %d", c.ObservedGeneration, svc.Generation)
		}
		return nil
	})
	return svc
}

// The statuses of the controller this cluster lacks: the gateway's.
// Deployments, LeaderWorkerSets, their ReplicaSets, StatefulSets and Pods
// are real: kube-controller-manager, the LeaderWorkerSet operator,
// kube-scheduler and kwok run them on simulated nodes
// (testenv.Cluster).

// gateway creates a programmed Gateway with one HTTP listener and an
// address.
func (e *env) gateway(namespace, name, address string) {
	e.t.Helper()
	e.gatewayOfClass(namespace, name, address, "test")
}

// gatewayOfClass is gateway with the GatewayClass named class.
func (e *env) gatewayOfClass(namespace, name, address, class string) {
	e.t.Helper()
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayv1.ObjectName(class),
			Listeners:        []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}},
		},
	}
	ctx := context.Background()
	if err := e.c.Create(ctx, gw); err != nil {
		e.t.Fatalf("create gateway %s/%s: %v", namespace, name, err)
	}
	gw.Status = gatewayv1.GatewayStatus{
		Addresses:  []gatewayv1.GatewayStatusAddress{{Type: ptr(gatewayv1.HostnameAddressType), Value: address}},
		Conditions: []metav1.Condition{condition("Programmed", gw.Generation)},
	}
	if err := e.c.Status().Update(ctx, gw); err != nil {
		e.t.Fatalf("gateway %s/%s status: %v", namespace, name, err)
	}
}

func condition(t string, generation int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, ObservedGeneration: generation, LastTransitionTime: metav1.Now()}
}

func ptr[T any](v T) *T { return &v }

// simulate writes the status that the gateway would write for everything
// in the test namespace: routes and pools accepted by their gateways.
func (e *env) simulate() {
	e.t.Helper()
	e.simulateRoutes()
	e.simulatePools()
}

// simulateRoutes has every route accepted by each of its parents. The
// entries of other controllers (Kuadrant's, simulateKuadrant) stay.
func (e *env) simulateRoutes() {
	e.t.Helper()
	const gatewayController = "example.com/gateway"
	e.updateStatuses(statusesToWrite(e, &gatewayv1.HTTPRouteList{}, func(rt *gatewayv1.HTTPRoute) bool {
		var parents, others []gatewayv1.RouteParentStatus
		for _, p := range rt.Spec.ParentRefs {
			parents = append(parents, gatewayv1.RouteParentStatus{
				ParentRef: p, ControllerName: gatewayController,
				Conditions: []metav1.Condition{condition("Accepted", rt.Generation), condition("ResolvedRefs", rt.Generation)},
			})
		}
		var live []gatewayv1.RouteParentStatus
		for _, p := range rt.Status.Parents {
			if p.ControllerName == gatewayController {
				live = append(live, p)
			} else {
				others = append(others, p)
			}
		}
		if len(live) == len(parents) && len(parents) > 0 && live[0].Conditions[0].ObservedGeneration == rt.Generation {
			return false
		}
		parents = append(parents, others...)
		rt.Status.Parents = parents
		return true
	}))
}

// simulatePools has every InferencePool (both groups) accepted by the
// ingress gateway.
func (e *env) simulatePools() {
	e.t.Helper()
	waiting := func(parents int, name string) bool {
		return parents == 0 && (e.poolFilter == nil || e.poolFilter(name))
	}
	gw := gieapiv1.ParentReference{Group: ptr(gieapiv1.Group("gateway.networking.k8s.io")), Kind: "Gateway", Name: "kserve-ingress-gateway", Namespace: gieapiv1.Namespace(e.sys)}
	pending := statusesToWrite(e, &gieapiv1.InferencePoolList{}, func(p *gieapiv1.InferencePool) bool {
		if !waiting(len(p.Status.Parents), p.Name) {
			return false
		}
		p.Status.Parents = []gieapiv1.ParentStatus{{ParentRef: gw, Conditions: []metav1.Condition{condition("Accepted", p.Generation), condition("ResolvedRefs", p.Generation)}}}
		return true
	})
	pending = append(pending, statusesToWrite(e, &gieapixv1alpha2.InferencePoolList{}, func(p *gieapixv1alpha2.InferencePool) bool {
		if !waiting(len(p.Status.Parents), p.Name) {
			return false
		}
		p.Status.Parents = []gieapixv1alpha2.PoolStatus{{
			GatewayRef: gieapixv1alpha2.ParentGatewayReference{
				Group: ptr(gieapixv1alpha2.Group("gateway.networking.k8s.io")), Kind: ptr(gieapixv1alpha2.Kind("Gateway")),
				Name: "kserve-ingress-gateway", Namespace: ptr(gieapixv1alpha2.Namespace(e.sys)),
			},
			Conditions: []metav1.Condition{condition("Accepted", p.Generation), condition("ResolvedRefs", p.Generation)},
		}}
		return true
	})...)
	e.updateStatuses(pending)
}

// statusesToWrite lists the objects of list's kind in the test namespace and
// returns those set gave a status: set writes into an object what the
// controller the test plays would report, and returns false when the object
// has that already.
func statusesToWrite[P client.Object](e *env, list client.ObjectList, set func(P) bool) []client.Object {
	e.t.Helper()
	if err := e.c.List(context.Background(), list, client.InNamespace(e.ns)); apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil // the kind's CRD is not installed (TestPoolCRDsComeAndGo)
	} else if err != nil {
		e.t.Fatal(err)
	}
	items, err := meta.ExtractList(list)
	e.must(err)
	var pending []client.Object
	for _, item := range items {
		obj, ok := item.(P)
		if !ok {
			e.t.Fatalf("%T in a %T", item, list)
		}
		if set(obj) {
			pending = append(pending, obj)
		}
	}
	return pending
}

// waitReady simulates the other controllers until the service is Ready.
func (e *env) waitReady(name string) *v1alpha2.LLMInferenceService {
	e.t.Helper()
	var svc *v1alpha2.LLMInferenceService
	testenv.Eventually(e.t, "service "+name+" is Ready", func() error {
		e.simulate()
		svc = e.service(name)
		c := cond(svc, v1alpha2.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || svc.Status.ObservedGeneration != svc.Generation {
			return fmt.Errorf("Ready: %+v (generation %d, observed %d)", c, svc.Generation, svc.Status.ObservedGeneration)
		}
		return nil
	})
	return svc
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// updateStatuses writes the objects' statuses, eight at a time; a
// conflict or a deleted object is left for the next round.
func (e *env) updateStatuses(objs []client.Object) {
	e.t.Helper()
	forEach(e.t, len(objs), func(i int) error {
		err := e.c.Status().Update(context.Background(), objs[i])
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("status of %T %s: %w", objs[i], objs[i].GetName(), err)
		}
		return nil
	})
}

func clientKey(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}
