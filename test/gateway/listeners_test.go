package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
	"github.com/opendatahub-io/odh-serving/test/modelserver"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func init() { testenv.InitLogger() }

// TestListenersOnAnAPIServer runs the Listeners controller against a real
// API server: a Gateway gets a loopback address of its own in its status,
// Programmed, with its attached route counted, and a request to that
// address reaches the model server of the Service's Ready pod.
func TestListenersOnAnAPIServer(t *testing.T) {
	// kube-scheduler, kube-controller-manager and kwok run the Deployment's
	// pod: no status is written here.
	nodes.Need(t)
	mgr, err := manager.New(cp.Config, manager.Options{Scheme: cp.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	router := NewRouter(mgr.GetClient(), Options{})
	t.Cleanup(router.Close)
	first := fmt.Sprintf("127.%d.0.1", 100+time.Now().Nanosecond()%100)
	if _, err := NewListeners(mgr, router, first); err != nil {
		t.Fatal(err)
	}
	testenv.Start(t, "test gateway", mgr.Start)
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	fleet := modelserver.NewFleet(modelserver.ClientSecrets(cs), modelserver.Options{ResponseTime: time.Millisecond})
	testenv.Start(t, "model servers", func(ctx context.Context) error { return fleet.Run(ctx, cs) })

	c := cp.Client
	ctx := t.Context()
	ns := testenv.NewNamespace(t, c, "gateway")
	deleteAtEnd(t, c, ns)
	port := gatewayv1.PortNumber(testenv.FreePort(t))
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayv1.Listener{
			{Name: "http", Port: port, Protocol: gatewayv1.HTTPProtocolType},
			{Name: "tcp", Port: 9999, Protocol: gatewayv1.TCPProtocolType},
		}},
	}
	podLabels := map[string]string{"app": "m", "kserve.io/component": "workload"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "model"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "main", Image: "sim", Args: []string{"--served-model-name", "m"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}},
				}}},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "m"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	rt := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches:     []gatewayv1.HTTPRouteMatch{{Path: prefix("/" + ns + "/m")}},
				Filters:     []gatewayv1.HTTPRouteFilter{rewriteTo("/")},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "m", Port: ptr.To(gatewayv1.PortNumber(80))}}}},
			}},
		},
	}
	for _, o := range []client.Object{gw, dep, svc, rt} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}

	var addr string
	testenv.Eventually(t, "the Gateway programmed at its address", func() error {
		got := &gatewayv1.Gateway{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gw"}, got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed)) || len(got.Status.Addresses) != 1 {
			return fmt.Errorf("status %+v", got.Status)
		}
		if len(got.Status.Listeners) != 2 || got.Status.Listeners[0].AttachedRoutes != 1 {
			return fmt.Errorf("listeners %+v", got.Status.Listeners)
		}
		if meta.IsStatusConditionTrue(got.Status.Listeners[1].Conditions, string(gatewayv1.ListenerConditionAccepted)) {
			return errors.New("the TCP listener is accepted")
		}
		addr = got.Status.Addresses[0].Value
		return nil
	})
	if addr != first {
		t.Errorf("address %s; want the first one handed out, %s", addr, first)
	}
	testenv.Eventually(t, "a request through the Gateway's address", func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://%s:%d/%s/m/v1/completions", addr, port, ns), strings.NewReader(`{"model":"m","prompt":"x"}`))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("X-Model-Server-Pod"), "model-") {
			return fmt.Errorf("%d from pod %q", resp.StatusCode, resp.Header.Get("X-Model-Server-Pod"))
		}
		return nil
	})
}

// TestListenersKeepServingAnUnchangedGateway: a reconcile of a Gateway
// whose listeners did not change (a new object read from the cache, its
// status or annotations changed) keeps the servers, and with them the
// connections in use; a changed listener serves anew.
func TestListenersKeepServingAnUnchangedGateway(t *testing.T) {
	l, gw := listenersWithoutAPIServer(t, randomFirst())
	gw.Spec.Listeners[0].AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromAll)}}
	serve := func(gw *gatewayv1.Gateway) *http.Server {
		t.Helper()
		if errs, err := l.serve(t.Context(), gw); err != nil || len(errs) > 0 {
			t.Fatalf("serve: %v %v", err, errs)
		}
		return l.byGW[types.NamespacedName{Namespace: "ns", Name: "gw"}].servers["http"]
	}
	before := serve(gw.DeepCopy())
	again := gw.DeepCopy()
	again.Annotations = map[string]string{"changed": "yes"}
	if serve(again) != before {
		t.Error("the Gateway's listener was served anew though its listeners did not change: every connection to it was closed")
	}
	changed := gw.DeepCopy()
	changed.Spec.Listeners[0].Port = gatewayv1.PortNumber(testenv.FreePort(t))
	if serve(changed) == before {
		t.Error("a changed listener port is still served by the old server")
	}
}

// TestListenersSkipAnAddressAnotherProcessClaimed: a Gateway is not served
// at an address another process's test gateway has claimed
// (test/hostlock), even where the ports it wants are free there: that
// gateway may serve other ports there, or be between closing and reopening
// its listeners for a changed Gateway. Two test packages' gateways at one
// address answer each other's requests.
func TestListenersSkipAnAddressAnotherProcessClaimed(t *testing.T) {
	first := randomFirst()
	other, err := hostlock.Try(hostlock.Dir(), "gateway-"+first.String()) // as another process's gateway would
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Release() })
	l, gw := listenersWithoutAPIServer(t, first)
	if errs, err := l.serve(t.Context(), gw); err != nil || len(errs) > 0 {
		t.Fatalf("serve: %v %v", err, errs)
	}
	addr, _ := l.Address(types.NamespacedName{Namespace: "ns", Name: "gw"})
	if addr == first.String() {
		t.Fatalf("the Gateway is served at %s, which another process claimed", addr)
	}
	if _, err := hostlock.Try(hostlock.Dir(), "gateway-"+addr); !errors.Is(err, hostlock.ErrHeld) {
		t.Errorf("the Gateway's address %s is not claimed while it is served: %v", addr, err)
	}
	l.Close()
	again, err := hostlock.Try(hostlock.Dir(), "gateway-"+addr)
	if err != nil {
		t.Fatalf("the address %s is still claimed after Close: %v", addr, err)
	}
	if err := again.Release(); err != nil {
		t.Fatal(err)
	}
}

// randomFirst is a first address for Listeners that other test runs are
// unlikely to use.
func randomFirst() net.IP {
	return net.ParseIP(fmt.Sprintf("127.%d.0.1", 100+time.Now().Nanosecond()%100)).To4()
}

// listenersWithoutAPIServer are Listeners from first whose serve a test
// calls itself, closed when the test ends, and a Gateway ns/gw with one
// HTTP listener on a free port.
func listenersWithoutAPIServer(t *testing.T, first net.IP) (*Listeners, *gatewayv1.Gateway) {
	t.Helper()
	l := &Listeners{router: NewRouter(nil, Options{}), first: first, byGW: map[types.NamespacedName]*gatewayServers{}, inUse: map[string]bool{}}
	t.Cleanup(l.Close)
	return l, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayv1.Listener{{
			Name: "http", Port: gatewayv1.PortNumber(testenv.FreePort(t)), Protocol: gatewayv1.HTTPProtocolType,
		}}},
	}
}
