package gateway

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/migration"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestStatusDrivesTheMigration runs the whole test gateway on an API server
// and checks the status it writes, as the controller's migration decision
// reads it: a gateway that serves only v1alpha2 pools keeps a dual route
// dual (InvalidKind naming the v1 group, no parent on the v1 pool); once it
// serves v1 pools too, the v1 pool is Accepted and the route resolved, so
// the decision is v1; a gateway that serves only v1 pools rejects the
// v1alpha2 backend with InvalidKind, which moves to v1 at once. A missing
// backend and a listener that does not take the route's namespace are
// reported as such.
func TestStatusDrivesTheMigration(t *testing.T) {
	log := &testenv.Buffer{}
	first := fmt.Sprintf("127.%d.0.1", 100+time.Now().Nanosecond()%100)
	g, err := New(cp.Config, first, Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Start(t, "test gateway", g.Start)
	c := cp.Client
	ctx := t.Context()
	sys, ns := testenv.NewNamespace(t, c, "gw-system"), testenv.NewNamespace(t, c, "gw-app")
	deleteAtEnd(t, c, sys)
	deleteAtEnd(t, c, ns)

	gateway := func(name string, from gatewayv1.FromNamespaces, groups ...string) *gatewayv1.Gateway {
		gw := &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: sys, Name: name},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayv1.Listener{{
				Name: "http", Port: gatewayv1.PortNumber(testenv.FreePort(t)), Protocol: gatewayv1.HTTPProtocolType,
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(from)}},
			}}},
		}
		if groups != nil {
			gw.Annotations = map[string]string{PoolGroupsAnnotation: strings.Join(groups, ",")}
		}
		return gw
	}
	v1Group, alpha2Group := gieapiv1.GroupVersion.Group, gieapixv1alpha2.GroupVersion.Group
	pools := func(name string) (*gieapiv1.InferencePool, *gieapixv1alpha2.InferencePool) {
		return &gieapiv1.InferencePool{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: gieapiv1.InferencePoolSpec{
					Selector: gieapiv1.LabelSelector{MatchLabels: map[gieapiv1.LabelKey]gieapiv1.LabelValue{"app": gieapiv1.LabelValue(name)}}, TargetPorts: []gieapiv1.Port{{Number: 8000}},
					EndpointPickerRef: gieapiv1.EndpointPickerRef{Kind: "Service", Name: gieapiv1.ObjectName(name + "-epp"), Port: &gieapiv1.Port{Number: 9002}, FailureMode: gieapiv1.EndpointPickerFailOpen},
				},
			}, &gieapixv1alpha2.InferencePool{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: gieapixv1alpha2.InferencePoolSpec{
					Selector: map[gieapixv1alpha2.LabelKey]gieapixv1alpha2.LabelValue{"app": gieapixv1alpha2.LabelValue(name)}, TargetPortNumber: 8000,
					ExtensionRef: gieapixv1alpha2.Extension{Name: gieapixv1alpha2.ObjectName(name + "-epp"), PortNumber: ptr.To[gieapixv1alpha2.PortNumber](9002)},
				},
			}
	}
	svc := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 9002}}}}
	}
	route := func(name, gw string, refs ...gatewayv1.HTTPBackendRef) *gatewayv1.HTTPRoute {
		return &gatewayv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(gw), Namespace: ptr.To(gatewayv1.Namespace(sys))}}},
				Rules:           []gatewayv1.HTTPRouteRule{{BackendRefs: refs}},
			},
		}
	}
	dual := func(pool string) []gatewayv1.HTTPBackendRef {
		return []gatewayv1.HTTPBackendRef{backendRef(alpha2Group, "InferencePool", pool, 100), backendRef(v1Group, "InferencePool", pool, 0)}
	}
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("create %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	// decide reads what the controller's migration decision reads.
	decide := func(routeName, pool string) (migration.Decision, *gatewayv1.HTTPRoute, *gieapiv1.InferencePool, *gieapixv1alpha2.InferencePool, error) {
		rt, v1, a2 := &gatewayv1.HTTPRoute{}, &gieapiv1.InferencePool{}, &gieapixv1alpha2.InferencePool{}
		for _, r := range []struct {
			name string
			obj  client.Object
		}{{routeName, rt}, {pool, v1}, {pool, a2}} {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.name}, r.obj); err != nil {
				return migration.Decision{}, nil, nil, nil, err
			}
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a2)
		if err != nil {
			return migration.Decision{}, nil, nil, nil, err
		}
		d := migration.Decide(migration.Input{Route: rt, PoolV1: v1, PoolAlpha2: &unstructured.Unstructured{Object: obj},
			V1Served: true, Alpha2Served: true, Now: time.Now(), Grace: time.Hour})
		return d, rt, v1, a2, nil
	}
	routeCondition := func(rt *gatewayv1.HTTPRoute, typ gatewayv1.RouteConditionType) *metav1.Condition {
		for _, p := range rt.Status.Parents {
			if p.ControllerName == ControllerName {
				if c := meta.FindStatusCondition(p.Conditions, string(typ)); c != nil && c.ObservedGeneration == rt.Generation {
					return c
				}
			}
		}
		return nil
	}

	old := gateway("old", gatewayv1.NamespacesFromAll, alpha2Group)
	v1Only := gateway("v1-only", gatewayv1.NamespacesFromAll, v1Group)
	// The GatewayClass goes with the test, so that the status checked
	// below is this run's.
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "test"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/any"}}
	create(class)
	t.Cleanup(func() {
		if err := c.Delete(context.WithoutCancel(ctx), class); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete GatewayClass test: %v", err)
		}
	})
	create(old, v1Only, gateway("private", gatewayv1.NamespacesFromSame))
	a1, a2 := pools("a")
	b1, b2 := pools("b")
	create(a1, a2, b1, b2, svc("a-epp"), svc("b-epp"),
		route("a", "old", dual("a")...), route("b", "v1-only", dual("b")...),
		route("broken", "old", backendRef("", "Service", "nothing-here", 1)),
		route("to-private", "private", backendRef("", "Service", "a-epp", 1)))

	t.Run("a Gateway Programmed at a loopback address, its class Accepted", func(t *testing.T) {
		testenv.Eventually(t, "Gateway old programmed", func() error {
			gw := &gatewayv1.Gateway{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(old), gw); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed)) || len(gw.Status.Addresses) != 1 {
				return fmt.Errorf("status %+v", gw.Status)
			}
			if ip := net.ParseIP(gw.Status.Addresses[0].Value); ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("address %q, want a loopback address", gw.Status.Addresses[0].Value)
			}
			if n := gw.Status.Listeners[0].AttachedRoutes; n != 2 {
				return fmt.Errorf("%d attached routes, want 2", n)
			}
			gc := &gatewayv1.GatewayClass{}
			if err := c.Get(ctx, client.ObjectKey{Name: "test"}, gc); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(gc.Status.Conditions, string(gatewayv1.GatewayClassConditionStatusAccepted)) {
				return fmt.Errorf("GatewayClass %+v", gc.Status.Conditions)
			}
			return nil
		})
	})

	t.Run("a gateway serving v1alpha2 pools only keeps the route dual", func(t *testing.T) {
		testenv.Eventually(t, "the route and pools reported", func() error {
			d, rt, v1, a2, err := decide("a", "a")
			if err != nil {
				return err
			}
			rr := routeCondition(rt, gatewayv1.RouteConditionResolvedRefs)
			switch {
			case rr == nil || rr.Status != metav1.ConditionFalse || rr.Reason != string(gatewayv1.RouteReasonInvalidKind) || !strings.Contains(rr.Message, `"`+v1Group+`"`):
				return fmt.Errorf("route ResolvedRefs %+v, want False for InvalidKind naming %s", rr, v1Group)
			case len(a2.Status.Parents) != 1 || !meta.IsStatusConditionTrue(a2.Status.Parents[0].Conditions, "Accepted"):
				return fmt.Errorf("v1alpha2 pool parents %+v", a2.Status.Parents)
			case len(v1.Status.Parents) != 0:
				return fmt.Errorf("v1 pool parents %+v, want none", v1.Status.Parents)
			case d.Phase != convention.PhaseDual:
				return fmt.Errorf("decision %s (%s), want dual", d.Phase, d.Message)
			}
			return nil
		})
	})

	t.Run("once it serves v1 pools too, the route moves to v1", func(t *testing.T) {
		gw := &gatewayv1.Gateway{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(old), gw); err != nil {
			t.Fatal(err)
		}
		delete(gw.Annotations, PoolGroupsAnnotation)
		if err := c.Update(ctx, gw); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the v1 pool accepted", func() error {
			d, rt, v1, _, err := decide("a", "a")
			if err != nil {
				return err
			}
			if rr := routeCondition(rt, gatewayv1.RouteConditionResolvedRefs); rr == nil || rr.Status != metav1.ConditionTrue {
				return fmt.Errorf("route ResolvedRefs %+v", rr)
			}
			if len(v1.Status.Parents) != 1 || v1.Status.Parents[0].ControllerName != ControllerName {
				return fmt.Errorf("v1 pool parents %+v", v1.Status.Parents)
			}
			for _, typ := range []string{"Accepted", "ResolvedRefs"} {
				if c := meta.FindStatusCondition(v1.Status.Parents[0].Conditions, typ); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != v1.Generation {
					return fmt.Errorf("v1 pool %s %+v", typ, c)
				}
			}
			if d.Phase != convention.PhaseV1 {
				return fmt.Errorf("decision %s (%s), want v1", d.Phase, d.Message)
			}
			return nil
		})
	})

	t.Run("a gateway serving v1 pools only rejects the v1alpha2 backend: v1 at once", func(t *testing.T) {
		testenv.Eventually(t, "the route reported", func() error {
			d, rt, _, a2, err := decide("b", "b")
			if err != nil {
				return err
			}
			rr := routeCondition(rt, gatewayv1.RouteConditionResolvedRefs)
			switch {
			case rr == nil || rr.Reason != string(gatewayv1.RouteReasonInvalidKind) || !strings.Contains(rr.Message, alpha2Group):
				return fmt.Errorf("route ResolvedRefs %+v, want InvalidKind naming %s", rr, alpha2Group)
			case len(a2.Status.Parents) != 0:
				return fmt.Errorf("v1alpha2 pool parents %+v, want none", a2.Status.Parents)
			case d.Phase != convention.PhaseV1 || d.Reason != migration.ReasonAlpha2InvalidKind:
				return fmt.Errorf("decision %s %s (%s), want v1 for %s", d.Phase, d.Reason, d.Message, migration.ReasonAlpha2InvalidKind)
			}
			return nil
		})
	})

	t.Run("a missing backend and a listener that does not take the namespace", func(t *testing.T) {
		for _, want := range []struct {
			route  string
			typ    gatewayv1.RouteConditionType
			reason gatewayv1.RouteConditionReason
		}{
			{"broken", gatewayv1.RouteConditionResolvedRefs, gatewayv1.RouteReasonBackendNotFound},
			{"to-private", gatewayv1.RouteConditionAccepted, gatewayv1.RouteReasonNotAllowedByListeners},
		} {
			testenv.Eventually(t, "route "+want.route+" reported", func() error {
				rt := &gatewayv1.HTTPRoute{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: want.route}, rt); err != nil {
					return err
				}
				if got := routeCondition(rt, want.typ); got == nil || got.Status != metav1.ConditionFalse || got.Reason != string(want.reason) {
					return fmt.Errorf("%s %+v, want False for %s", want.typ, got, want.reason)
				}
				return nil
			})
		}
	})
	if !strings.Contains(log.String(), "HTTPRoute "+ns+"/a (generation 1): "+sys+"/old: Accepted=true ResolvedRefs=InvalidKind") {
		t.Errorf("the log does not report the route:\n%s", log)
	}
}
