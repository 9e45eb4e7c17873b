package migrationtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/internal/migration"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func init() { testenv.InitLogger() } // TEST_LOG=1 shows the controller's logs

// flow is one test's controller and namespaces. The test plays the
// gateway: it writes the route's and the pools' parent status.
type flow struct {
	t       *testing.T
	c       client.Client
	ns, sys string
}

// startFlow runs the controller for a new namespace with the grace period
// and, when static, in static mode.
func startFlow(t *testing.T, grace time.Duration, static bool) *flow {
	t.Helper()
	f := &flow{t: t, c: cp.Client, ns: testenv.NewNamespace(t, cp.Client, "flow"), sys: testenv.NewNamespace(t, cp.Client, "flow-sys")}
	f.gateway()
	opts := controller.Options{
		Options: engine.Options{SystemNamespace: f.sys}, WatchNamespaces: []string{f.ns}, DisableWebhooks: true,
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", MigrationGracePeriod: grace, StaticMode: static,
	}
	testenv.Start(t, "controller", func(ctx context.Context) error { return controller.Run(ctx, cp.Config, opts) })
	return f
}

// startAtDual starts a controller and a fresh service, which starts at
// dual: both pool APIs are served and no gateway has spoken yet.
func startAtDual(t *testing.T, grace time.Duration) *flow {
	t.Helper()
	f := startFlow(t, grace, false)
	f.service(nil)
	f.waitPhase(convention.PhaseDual, dualWeights)
	return f
}

// gatewayRoutesV1 writes what a gateway that routes to v1 reports: the v1
// pool Accepted and the route's references resolved.
func (f *flow) gatewayRoutesV1() {
	f.t.Helper()
	f.poolV1Status(metav1.ConditionTrue)
	f.routeStatus(metav1.ConditionTrue, "ResolvedRefs", "", 0)
}

const (
	gatewayName = "kserve-ingress-gateway"
	// svcName is every flow test's service.
	svcName = "llm"
)

// gateway makes the ingress gateway the managed routes attach to.
func (f *flow) gateway() {
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.sys, Name: gatewayName},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "test",
			Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}},
	}
	f.must(f.c.Create(context.Background(), gw))
	gw.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", ObservedGeneration: gw.Generation, LastTransitionTime: metav1.Now()}}
	f.must(f.c.Status().Update(context.Background(), gw))
}

// service creates a CPU simulator service with a managed route, gateway
// and scheduler.
func (f *flow) service(annotations map[string]string) {
	f.t.Helper()
	svc := &v1alpha2.LLMInferenceService{}
	f.must(yaml.UnmarshalStrict([]byte(`
spec:
  model:
    name: Qwen/Qwen2.5-0.5B-Instruct
  baseRefs:
  - name: kserve-config-llm-cpu-simulator
  router:
    route: {}
    gateway: {}
    scheduler: {}
`), svc))
	svc.Name, svc.Namespace, svc.Annotations = svcName, f.ns, annotations
	f.must(f.c.Create(context.Background(), svc))
}

func (f *flow) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *flow) get() *v1alpha2.LLMInferenceService {
	f.t.Helper()
	svc := &v1alpha2.LLMInferenceService{}
	f.must(f.c.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: svcName}, svc))
	return svc
}

// waitPhase waits until the service records phase and its route has the
// weights want (see weights()).
func (f *flow) waitPhase(phase convention.Phase, want string) *v1alpha2.LLMInferenceService {
	f.t.Helper()
	var svc *v1alpha2.LLMInferenceService
	testenv.Eventually(f.t, fmt.Sprintf("phase %s with route weights %s", phase, want), func() error {
		svc = f.get()
		ip := svc.Status.InferencePool
		if ip == nil || ip.MigrationPhase != string(phase) {
			return fmt.Errorf("status.inferencePool %+v; migrated condition %+v", ip, meta.FindStatusCondition(svc.Status.Conditions, migration.ConditionMigrated))
		}
		rt := &gatewayv1.HTTPRoute{}
		if err := f.c.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: svcName + "-kserve-route"}, rt); err != nil {
			return err
		}
		if got := weights(rt); !strings.HasPrefix(got, want) {
			return fmt.Errorf("route weights %s", got)
		}
		return nil
	})
	return svc
}

// waitMessage waits until the InferencePoolMigrated condition's message
// contains text: the controller has seen what the test wrote.
func (f *flow) waitMessage(text string) {
	f.t.Helper()
	testenv.Eventually(f.t, fmt.Sprintf("migration message with %q", text), func() error {
		c := meta.FindStatusCondition(f.get().Status.Conditions, migration.ConditionMigrated)
		if c == nil || !strings.Contains(c.Message, text) {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

// routeStatus writes the gateway's ResolvedRefs for the route, observed at
// the route's generation plus genOffset (negative: stale).
func (f *flow) routeStatus(status metav1.ConditionStatus, reason, message string, genOffset int64) {
	f.t.Helper()
	testenv.Eventually(f.t, "route status written", func() error {
		rt := &gatewayv1.HTTPRoute{}
		if err := f.c.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: svcName + "-kserve-route"}, rt); err != nil {
			return err
		}
		gen := rt.Generation + genOffset
		ns := gatewayv1.Namespace(f.sys)
		rt.Status.Parents = []gatewayv1.RouteParentStatus{{
			ParentRef:      gatewayv1.ParentReference{Name: gatewayName, Namespace: &ns},
			ControllerName: "example.com/gateway",
			Conditions: []metav1.Condition{
				{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: gen, LastTransitionTime: metav1.Now()},
				{Type: "ResolvedRefs", Status: status, Reason: reason, Message: message, ObservedGeneration: gen, LastTransitionTime: metav1.Now()},
			},
		}}
		return f.c.Status().Update(context.Background(), rt)
	})
}

// poolV1Status writes the gateway's Accepted for the v1 pool.
func (f *flow) poolV1Status(status metav1.ConditionStatus) {
	f.t.Helper()
	reason, message := "SupportedByParent", ""
	if status != metav1.ConditionTrue {
		reason, message = "NotSupported", poolRejected
	}
	testenv.Eventually(f.t, "v1 pool status written", func() error {
		p := &gieapiv1.InferencePool{}
		if err := f.c.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: svcName + "-inference-pool"}, p); err != nil {
			return err
		}
		p.Status.Parents = []gieapiv1.ParentStatus{{
			ParentRef:  gieapiv1.ParentReference{Kind: "Gateway", Name: gatewayName, Namespace: gieapiv1.Namespace(f.sys)},
			Conditions: []metav1.Condition{{Type: "Accepted", Status: status, Reason: reason, Message: message, ObservedGeneration: p.Generation, LastTransitionTime: metav1.Now()}},
		}}
		return f.c.Status().Update(context.Background(), p)
	})
}

func (f *flow) alpha2PoolExists() bool {
	f.t.Helper()
	err := f.c.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: svcName + "-inference-pool"}, &gieapixv1alpha2.InferencePool{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatal(err)
	}
	return err == nil
}

const (
	dualWeights    = "alpha2=100 v1=0"
	v1Weights      = "v1=100 alpha2=0"
	retiredWeights = "v1="
	envoyAlpha2    = "Unsupported kind InferencePool of group inference.networking.x-k8s.io"
	envoyV1        = "Unsupported kind InferencePool of group inference.networking.k8s.io"
	poolRejected   = "rejected by the test gateway"
)

// TestFlowDualToV1ToRetired: a fresh service starts at dual; the gateway
// accepts the v1 pool and resolves the route, so it moves to v1 with the
// mark; after the grace period the v1alpha2 pool and backend go.
func TestFlowDualToV1ToRetired(t *testing.T) {
	f := startAtDual(t, 3*time.Second)
	if !f.alpha2PoolExists() {
		t.Fatal("no v1alpha2 pool at dual")
	}
	f.gatewayRoutesV1()
	svc := f.waitPhase(convention.PhaseV1, v1Weights)
	c := meta.FindStatusCondition(svc.Status.Conditions, migration.ConditionMigrated)
	if c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("InferencePoolMigrated = %+v", c)
	}
	rt := &gatewayv1.HTTPRoute{}
	f.must(f.c.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: "llm-kserve-route"}, rt))
	if rt.Annotations[migration.AnnotationMigrated] != "v1" {
		t.Errorf("route annotations %v", rt.Annotations)
	}
	f.waitPhase(convention.PhaseRetired, retiredWeights)
	testenv.Eventually(t, "the v1alpha2 pool is deleted", func() error {
		if f.alpha2PoolExists() {
			return fmt.Errorf("still there")
		}
		return nil
	})
	if got := weights(f.route()); got != "v1=1" && !strings.HasPrefix(got, "v1=") || strings.Contains(got, "alpha2") {
		t.Errorf("retired route weights %s", got)
	}
}

func (f *flow) route() *gatewayv1.HTTPRoute {
	f.t.Helper()
	rt := &gatewayv1.HTTPRoute{}
	f.must(f.c.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: svcName + "-kserve-route"}, rt))
	return rt
}

// TestFlowInvalidKind: the gateway rejects the v1alpha2 backend with
// InvalidKind, naming its group; the route moves to v1 at once, with no
// pool status at all.
func TestFlowInvalidKind(t *testing.T) {
	f := startAtDual(t, time.Hour)
	f.routeStatus(metav1.ConditionFalse, "InvalidKind", envoyAlpha2, 0)
	svc := f.waitPhase(convention.PhaseV1, v1Weights)
	if c := meta.FindStatusCondition(svc.Status.Conditions, migration.ConditionMigrated); c == nil || c.Reason != migration.ReasonAlpha2InvalidKind && c.Reason != migration.ReasonGracePeriod {
		t.Errorf("InferencePoolMigrated = %+v", c)
	}
}

// TestFlowGatewayAcceptsOnlyV1: the gateway accepted the v1 pool and
// answers InvalidKind for the route (its v1alpha2 backend): v1.
func TestFlowGatewayAcceptsOnlyV1(t *testing.T) {
	f := startAtDual(t, time.Hour)
	f.poolV1Status(metav1.ConditionTrue)
	f.routeStatus(metav1.ConditionFalse, "InvalidKind", "unsupported backend", 0)
	f.waitPhase(convention.PhaseV1, v1Weights)
}

// TestFlowStaleConditions: a route status from an older generation and a
// gateway that knows only v1alpha2 keep the route at dual; fresh evidence
// then moves it.
func TestFlowStaleConditions(t *testing.T) {
	f := startAtDual(t, time.Hour)
	// Each write is one the controller must see before the next, or a
	// state in between could move the route; the messages say it did.
	gw := f.sys + "/" + gatewayName
	f.routeStatus(metav1.ConditionTrue, "ResolvedRefs", "", -1)
	f.waitMessage("gateway " + gw + " has not reported ResolvedRefs for route generation")
	f.poolV1Status(metav1.ConditionTrue)
	f.waitMessage("gateway " + gw + " accepted the v1 InferencePool but has not reported ResolvedRefs")
	f.waitPhase(convention.PhaseDual, dualWeights)

	// A gateway that knows only v1alpha2: the v1 pool is not accepted and
	// the route's InvalidKind names the v1 group.
	f.poolV1Status(metav1.ConditionFalse)
	f.waitMessage("gateway " + gw + " has not reported ResolvedRefs for route generation")
	f.routeStatus(metav1.ConditionFalse, "InvalidKind", envoyV1, 0)
	f.waitMessage("rejects a backend kind")
	f.waitPhase(convention.PhaseDual, dualWeights)

	f.gatewayRoutesV1()
	f.waitPhase(convention.PhaseV1, v1Weights)
}

// TestFlowOldAnnotationSpelling: ODH's mark on the service moves it to v1
// with no gateway evidence; the route gets KServe's spelling.
func TestFlowOldAnnotationSpelling(t *testing.T) {
	f := startFlow(t, time.Hour, false)
	f.service(map[string]string{migration.AnnotationMigratedODH: "v1"})
	f.waitPhase(convention.PhaseV1, v1Weights)
	if got := f.route().Annotations[migration.AnnotationMigrated]; got != "v1" {
		t.Errorf("route mark %q", got)
	}
	f.waitMessage("traffic is on the v1 InferencePool")
}

// TestFlowNoRollback: after the move, the v1 pool is rejected and the
// route's v1 backend refused; the service stays on v1.
func TestFlowNoRollback(t *testing.T) {
	f := startAtDual(t, time.Hour)
	f.gatewayRoutesV1()
	f.waitPhase(convention.PhaseV1, v1Weights)
	f.waitMessage("the v1alpha2 pool is removed at")

	f.routeStatus(metav1.ConditionFalse, "InvalidKind", envoyV1, 0)
	f.poolV1Status(metav1.ConditionFalse)
	// The controller sees the rejection of the v1 pool (written last)...
	testenv.Eventually(t, "the controller reports the rejection", func() error {
		pool := meta.FindStatusCondition(f.get().Status.Conditions, "InferencePoolReady")
		if pool == nil || !strings.Contains(pool.Message, poolRejected) {
			return fmt.Errorf("InferencePoolReady %+v", pool)
		}
		return nil
	})
	// ...and keeps the route on v1.
	f.waitPhase(convention.PhaseV1, v1Weights)
	svc := f.get()
	if c := meta.FindStatusCondition(svc.Status.Conditions, migration.ConditionMigrated); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("InferencePoolMigrated = %+v", c)
	}
}

// TestFlowStaticMode: Helm made the route (at dual) and the pools; the
// controller in static mode only moves the weights, under its own field
// manager.
func TestFlowStaticMode(t *testing.T) {
	f := startFlow(t, time.Hour, true)
	ctx := context.Background()
	rt := helmRoute(f.ns)
	sys := gatewayv1.Namespace(f.sys)
	rt.Spec.ParentRefs[0].Namespace = &sys
	f.must(f.c.Create(ctx, rt))
	f.must(f.c.Create(ctx, &gieapiv1.InferencePool{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-inference-pool", Namespace: f.ns, Labels: renderedLabels()},
		Spec: gieapiv1.InferencePoolSpec{
			Selector:          gieapiv1.LabelSelector{MatchLabels: map[gieapiv1.LabelKey]gieapiv1.LabelValue{"app": "llm"}},
			TargetPorts:       []gieapiv1.Port{{Number: 8000}},
			EndpointPickerRef: gieapiv1.EndpointPickerRef{Name: "llm-epp-service", Port: &gieapiv1.Port{Number: 9002}},
		},
	}))
	f.must(f.c.Create(ctx, &gieapixv1alpha2.InferencePool{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-inference-pool", Namespace: f.ns, Labels: renderedLabels()},
		Spec: gieapixv1alpha2.InferencePoolSpec{
			Selector:         map[gieapixv1alpha2.LabelKey]gieapixv1alpha2.LabelValue{"app": "llm"},
			TargetPortNumber: 8000,
			ExtensionRef:     gieapixv1alpha2.Extension{Name: "llm-epp-service"},
		},
	}))
	f.service(nil)
	f.waitMessage("no gateway has reported on the route yet")
	if got := weights(f.route()); got != "alpha2=100 v1=0 | Service=1" {
		t.Errorf("static mode changed the route before any evidence: %s", got)
	}
	f.gatewayRoutesV1()
	testenv.Eventually(t, "the weights move to v1", func() error {
		if got := weights(f.route()); got != "alpha2=0 v1=100 | Service=1" {
			return fmt.Errorf("weights %s; migration %+v", got, meta.FindStatusCondition(f.get().Status.Conditions, migration.ConditionMigrated))
		}
		return nil
	})
	after := f.route()
	if after.Annotations[migration.AnnotationMigrated] != "v1" {
		t.Errorf("annotations %v", after.Annotations)
	}
	if owners := fieldOwners(t, after); !strings.Contains(owners[convention.MigrationFieldManager], "f:rules") {
		t.Errorf("managers: %v", owners)
	}
	if !f.alpha2PoolExists() {
		t.Error("static mode deleted Helm's v1alpha2 pool")
	}
}
