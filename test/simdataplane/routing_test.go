package simdataplane_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/migration"
	"github.com/opendatahub-io/odh-serving/test/simdataplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func service(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8000}}},
	}
}

func gateway(ns, name string, from gatewayv1.FromNamespaces) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "simulated",
			Listeners: []gatewayv1.Listener{{
				Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(from)}},
			}},
		},
	}
}

func backend(group, kind, name string, weight int32) gatewayv1.HTTPBackendRef {
	return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
		BackendObjectReference: gatewayv1.BackendObjectReference{
			Group: ptr.To(gatewayv1.Group(group)), Kind: ptr.To(gatewayv1.Kind(kind)), Name: gatewayv1.ObjectName(name), Port: ptr.To[gatewayv1.PortNumber](8000),
		},
		Weight: ptr.To(weight),
	}}
}

func route(ns, name, gwNamespace, gwName string, backends ...gatewayv1.HTTPBackendRef) *gatewayv1.HTTPRoute {
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Name: gatewayv1.ObjectName(gwName), Namespace: ptr.To(gatewayv1.Namespace(gwNamespace)),
			}}},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: backends}},
		},
	}
}

func pools(ns, name, epp string) (*gieapiv1.InferencePool, *gieapixv1alpha2.InferencePool) {
	sel := map[string]string{"app.kubernetes.io/name": name}
	v1 := &gieapiv1.InferencePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gieapiv1.InferencePoolSpec{
			Selector:    gieapiv1.LabelSelector{MatchLabels: map[gieapiv1.LabelKey]gieapiv1.LabelValue{"app.kubernetes.io/name": gieapiv1.LabelValue(name)}},
			TargetPorts: []gieapiv1.Port{{Number: 8000}},
			EndpointPickerRef: gieapiv1.EndpointPickerRef{
				Kind: "Service", Name: gieapiv1.ObjectName(epp), Port: &gieapiv1.Port{Number: 9002}, FailureMode: gieapiv1.EndpointPickerFailOpen,
			},
		},
	}
	alpha2 := &gieapixv1alpha2.InferencePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gieapixv1alpha2.InferencePoolSpec{
			Selector:         map[gieapixv1alpha2.LabelKey]gieapixv1alpha2.LabelValue{"app.kubernetes.io/name": gieapixv1alpha2.LabelValue(sel["app.kubernetes.io/name"])},
			TargetPortNumber: 8000,
			ExtensionRef: gieapixv1alpha2.Extension{
				Name: gieapixv1alpha2.ObjectName(epp), PortNumber: ptr.To[gieapixv1alpha2.PortNumber](9002), FailureMode: ptr.To(gieapixv1alpha2.FailOpen),
			},
		},
	}
	return v1, alpha2
}

// live reads what migration.Decide reads.
func live(t *testing.T, ns, routeName, poolName string) migration.Input {
	t.Helper()
	r, v1, a2 := &gatewayv1.HTTPRoute{}, &gieapiv1.InferencePool{}, &gieapixv1alpha2.InferencePool{}
	for _, err := range []error{get(t, r, ns, routeName), get(t, v1, ns, poolName), get(t, a2, ns, poolName)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a2)
	if err != nil {
		t.Fatal(err)
	}
	return migration.Input{Route: r, PoolV1: v1, PoolAlpha2: &unstructured.Unstructured{Object: obj},
		V1Served: true, Alpha2Served: true, Now: time.Now(), Grace: time.Hour}
}

func parentCondition(r *gatewayv1.HTTPRoute, kind string) *metav1.Condition {
	for _, p := range r.Status.Parents {
		if p.ControllerName == simdataplane.DefaultControllerName {
			return meta.FindStatusCondition(p.Conditions, kind)
		}
	}
	return nil
}

// waitRouteConditionFalse waits until the simulator's parent status of the
// route namespace/name has condition kind False for reason.
func waitRouteConditionFalse(t *testing.T, namespace, name string, kind gatewayv1.RouteConditionType, reason gatewayv1.RouteConditionReason) {
	t.Helper()
	waitStatus(t, namespace, name, func(r *gatewayv1.HTTPRoute) error {
		c := parentCondition(r, string(kind))
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != string(reason) {
			return fmt.Errorf("%s %+v, want False for %s", kind, c, reason)
		}
		return nil
	})
}

// TestIntegrationMigrationSeenByDecide: with the simulated gateway the
// migration package decides dual while only the v1alpha2 pool is accepted
// and v1 once the v1 pool is too, V1PoolDelay later.
func TestIntegrationMigrationSeenByDecide(t *testing.T) {
	const sys, ns, delay = "sim-system", "sim-app", 3 * time.Second
	testenv.EnsureNamespace(t, cp.Client, sys)
	testenv.EnsureNamespace(t, cp.Client, ns)
	log := startDataPlane(t, simdataplane.Options{V1PoolDelay: delay})

	create(t, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "simulated"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/anything"}})
	create(t, gateway(sys, "ingress", gatewayv1.NamespacesFromAll))
	v1, alpha2 := pools(ns, "llm-pool", "llm-epp")
	created := time.Now()
	create(t, service(ns, "llm-epp"), service(ns, "llm-workload"), v1, alpha2)
	create(t, route(ns, "llm-route", sys, "ingress",
		backend(gieapixv1alpha2.GroupName, "InferencePool", "llm-pool", 100),
		backend(gieapiv1.GroupName, "InferencePool", "llm-pool", 0),
		backend("", "Service", "llm-workload", 0)))

	t.Run("gateway Programmed with an address and the route attached", func(t *testing.T) {
		waitStatus(t, sys, "ingress", func(gw *gatewayv1.Gateway) error {
			c := meta.FindStatusCondition(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed))
			switch {
			case c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != gw.Generation:
				return fmt.Errorf("Programmed %+v at generation %d", c, gw.Generation)
			case len(gw.Status.Addresses) != 1 || gw.Status.Addresses[0].Value != simdataplane.DefaultGatewayAddress:
				return fmt.Errorf("addresses %+v", gw.Status.Addresses)
			case len(gw.Status.Listeners) != 1 || gw.Status.Listeners[0].AttachedRoutes != 1:
				return fmt.Errorf("listeners %+v", gw.Status.Listeners)
			}
			return nil
		})
		gc := &gatewayv1.GatewayClass{}
		if err := get(t, gc, "", "simulated"); err != nil {
			t.Fatal(err)
		}
		if !meta.IsStatusConditionTrue(gc.Status.Conditions, string(gatewayv1.GatewayClassConditionStatusAccepted)) {
			t.Errorf("GatewayClass not Accepted: %+v", gc.Status.Conditions)
		}
	})

	t.Run("dual while only the v1alpha2 pool is accepted", func(t *testing.T) {
		testenv.Within(t, 20*time.Second, "the simulated status", func() error {
			in := live(t, ns, "llm-route", "llm-pool")
			rr := parentCondition(in.Route, string(gatewayv1.RouteConditionResolvedRefs))
			if rr == nil || rr.Status != metav1.ConditionTrue || rr.ObservedGeneration != in.Route.Generation {
				return fmt.Errorf("route ResolvedRefs %+v", rr)
			}
			parents, _, _ := unstructured.NestedSlice(in.PoolAlpha2.Object, "status", "parent")
			if len(parents) != 1 {
				return fmt.Errorf("v1alpha2 pool parents %v", parents)
			}
			return nil
		})
		in := live(t, ns, "llm-route", "llm-pool")
		if time.Since(created) < delay && len(in.PoolV1.Status.Parents) != 0 {
			t.Errorf("the v1 pool was accepted before V1PoolDelay: %+v", in.PoolV1.Status.Parents)
		}
		if time.Since(created) < delay {
			if d := migration.Decide(in); d.Phase != convention.PhaseDual {
				t.Errorf("Decide before the v1 pool is accepted = %s (%s), want dual", d.Phase, d.Message)
			}
		}
	})

	t.Run("v1 once the v1 pool is accepted", func(t *testing.T) {
		testenv.Within(t, delay+20*time.Second, "the simulated status", func() error {
			in := live(t, ns, "llm-route", "llm-pool")
			if d := migration.Decide(in); d.Phase != convention.PhaseV1 {
				return fmt.Errorf("Decide = %s (%s)", d.Phase, d.Message)
			}
			return nil
		})
		if since := time.Since(created); since < delay {
			t.Errorf("v1 after %s, before V1PoolDelay %s", since, delay)
		}
		p := &gieapiv1.InferencePool{}
		if err := get(t, p, ns, "llm-pool"); err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"Accepted", "ResolvedRefs"} {
			c := meta.FindStatusCondition(p.Status.Parents[0].Conditions, kind)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != p.Generation {
				t.Errorf("v1 pool %s = %+v at generation %d", kind, c, p.Generation)
			}
		}
	})

	t.Run("missing backend: ResolvedRefs False", func(t *testing.T) {
		create(t, route(ns, "broken", sys, "ingress", backend("", "Service", "nothing-here", 1)))
		waitRouteConditionFalse(t, ns, "broken", gatewayv1.RouteConditionResolvedRefs, gatewayv1.RouteReasonBackendNotFound)
	})

	t.Run("listener for its own namespace only: not Accepted", func(t *testing.T) {
		create(t, gateway(sys, "private", gatewayv1.NamespacesFromSame))
		create(t, route(ns, "to-private", sys, "private", backend("", "Service", "llm-workload", 1)))
		waitRouteConditionFalse(t, ns, "to-private", gatewayv1.RouteConditionAccepted, gatewayv1.RouteReasonNotAllowedByListeners)
	})

	if !strings.Contains(log.String(), "accepts v1 pools 3s after they appear") {
		t.Errorf("the log does not say the v1 pool waits:\n%s", log)
	}
	if !strings.Contains(log.String(), "Gateway sim-system/ingress Programmed at 192.0.2.10") {
		t.Errorf("the log does not report the gateway:\n%s", log)
	}
}
