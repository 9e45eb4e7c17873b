package controllertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// unstructuredOf returns a function that makes empty objects of a kind
// (of a v1 API) the test has no Go types for.
func unstructuredOf(group, kind string) func() client.Object {
	return func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind})
		return u
	}
}

var (
	destinationRule  = unstructuredOf("networking.istio.io", "DestinationRule")
	backendTLSPolicy = unstructuredOf("gateway.networking.k8s.io", "BackendTLSPolicy")
	podMonitor       = unstructuredOf("monitoring.coreos.com", "PodMonitor")
	serviceMonitor   = unstructuredOf("monitoring.coreos.com", "ServiceMonitor")
)

// gatewayClass creates a GatewayClass of controller and deletes it when
// the test ends.
func (e *env) gatewayClass(name, controllerName string) {
	e.t.Helper()
	gc := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controllerName)},
	}
	e.must(e.c.Create(context.Background(), gc))
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), gc) })
}

// startOnGatewayOf is startWithGateway on a platform's gateway: the ingress
// Gateway's class (named prefix-<namespace>) is controllerName's. The
// controller resyncs every second.
func startOnGatewayOf(t *testing.T, prefix, controllerName string) *env {
	t.Helper()
	e := start(t, func(o *controller.Options) { o.SyncPeriod = time.Second })
	class := prefix + "-" + e.ns
	e.gatewayClass(class, controllerName)
	e.gatewayOfClass(e.sys, "kserve-ingress-gateway", "gw.example.com", class)
	return e
}

// TestPlatformKindsAppearAfterStart runs the controller on a cluster with
// an Istio gateway but neither Istio's DestinationRule CRD nor the
// Prometheus Operator's, then installs them: with no restart, the service
// gets its DestinationRules (the shadow Service's once Istio makes it) and
// its monitors, each owned by the service, and the steady state writes
// nothing. Stopping the service deletes them all, the metrics reader's
// ClusterRoleBinding included; deleting the service deletes that binding
// again (the controller, on the service's delete event).
func TestPlatformKindsAppearAfterStart(t *testing.T) {
	ctx := context.Background()
	e := startOnGatewayOf(t, "istio", "istio.io/gateway-controller")
	e.create(simulator)
	e.waitReady("sim")

	testenv.InstallCRDs(t, cp.Client, controlplane.PlatformCRDs...)
	rules := []string{"sim-kserve-scheduler", "sim-kserve-workload-svc"}
	e.waitExists(destinationRule, rules...)
	e.waitExists(podMonitor, "sim-kserve-llmisvc-engine")
	e.waitExists(serviceMonitor, "sim-kserve-llmisvc-scheduler")
	e.waitExists(serviceAccount, "sim-kserve-metrics-reader")
	e.waitExists(secret, "sim-kserve-metrics-reader")
	e.waitExists(clusterBinding, e.simMetricsReaderAuth())
	if e.exists(destinationRule(), "sim-kserve-shadow-svc") {
		t.Error("a DestinationRule for the shadow Service before Istio made it")
	}

	// Istio makes its Service for the pool: its DestinationRule follows.
	shadow := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: e.ns, Name: "sim-inference-pool-ip-0a1b2c3d",
			Labels: map[string]string{"istio.io/inferencepool-name": "sim-inference-pool"},
		},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "http", Port: 54321}}},
	}
	e.must(e.c.Create(ctx, shadow))
	e.waitExists(destinationRule, "sim-kserve-shadow-svc")

	dr := destinationRule().(*unstructured.Unstructured)
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "sim-kserve-shadow-svc"}, dr))
	host, _, _ := unstructured.NestedString(dr.Object, "spec", "host")
	tls, _, _ := unstructured.NestedMap(dr.Object, "spec", "trafficPolicy", "tls")
	workload := "sim-kserve-workload-svc." + e.ns + ".svc.cluster.local"
	if want := shadow.Name + "." + e.ns + ".svc.cluster.local"; host != want {
		t.Errorf("shadow DestinationRule host %q, want %q", host, want)
	}
	if tls["mode"] != "SIMPLE" || tls["sni"] != workload || tls["credentialName"] != "odh-serving-ca-bundle" || tls["insecureSkipVerify"] != nil {
		t.Errorf("shadow DestinationRule tls %v: want SIMPLE, SNI %s and our CA, never insecureSkipVerify", tls, workload)
	}
	// The gateway's namespace holds the CA the DestinationRules name.
	ca := &corev1.Secret{}
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.sys, Name: "odh-serving-ca-bundle"}, ca))
	tlsSecret := &corev1.Secret{}
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "sim-kserve-self-signed-certs"}, tlsSecret))
	if len(ca.Data["ca.crt"]) == 0 || string(ca.Data["ca.crt"]) != string(tlsSecret.Data["ca.crt"]) || len(ca.Data) != 1 {
		t.Errorf("the gateway's CA bundle holds %d keys, want only ca.crt, the serving certificates' CA", len(ca.Data))
	}
	svc := e.service("sim")
	for _, c := range []struct {
		obj  func() client.Object
		name string
	}{
		{destinationRule, "sim-kserve-scheduler"}, {destinationRule, "sim-kserve-workload-svc"}, {destinationRule, "sim-kserve-shadow-svc"},
		{podMonitor, "sim-kserve-llmisvc-engine"}, {serviceMonitor, "sim-kserve-llmisvc-scheduler"},
		{serviceAccount, "sim-kserve-metrics-reader"}, {secret, "sim-kserve-metrics-reader"},
	} {
		o := c.obj()
		e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: c.name}, o))
		if ref := metav1.GetControllerOf(o); ref == nil || ref.UID != svc.UID {
			t.Errorf("%T %s is not controlled by the service, so it would not go with it: %v", o, c.name, o.GetOwnerReferences())
		}
	}
	e.assertSteadyState()

	// Stopped: every one of them goes.
	e.update("sim", func(s *v1alpha2.LLMInferenceService) {
		s.Annotations = map[string]string{"serving.kserve.io/stop": "true"}
	})
	e.waitGone(destinationRule, append(rules, "sim-kserve-shadow-svc")...)
	e.waitGone(podMonitor, "sim-kserve-llmisvc-engine")
	e.waitGone(serviceMonitor, "sim-kserve-llmisvc-scheduler")
	e.waitGone(serviceAccount, "sim-kserve-metrics-reader")
	e.waitGone(secret, "sim-kserve-metrics-reader")
	e.waitGone(clusterBinding, e.simMetricsReaderAuth())

	// Started again, then deleted: the controller deletes the binding, which
	// no owner reference reaches.
	e.update("sim", func(s *v1alpha2.LLMInferenceService) { delete(s.Annotations, "serving.kserve.io/stop") })
	e.waitExists(clusterBinding, e.simMetricsReaderAuth())
	e.waitExists(destinationRule, rules...)
	e.must(e.c.Delete(ctx, e.service("sim")))
	e.waitGone(clusterBinding, e.simMetricsReaderAuth())
	testenv.Eventually(t, "the service is gone", func() error {
		if e.exists(&v1alpha2.LLMInferenceService{}, "sim") {
			return fmt.Errorf("still there")
		}
		return nil
	})
}

// TestBackendTLSPolicyOnEnvoyGateway attaches a service to an Envoy
// Gateway: it gets BackendTLSPolicies for its workload Service (and pool)
// and its endpoint picker, naming the CA bundle ConfigMap the controller
// keeps in its namespace, and no DestinationRule; the steady state writes
// nothing.
func TestBackendTLSPolicyOnEnvoyGateway(t *testing.T) {
	ctx := context.Background()
	e := startOnGatewayOf(t, "envoy", "gateway.envoyproxy.io/gatewayclass-controller")
	e.create(simulator)
	e.waitExists(backendTLSPolicy, "sim-kserve-scheduler", "sim-kserve-workload-svc")
	e.waitReady("sim")

	policy := backendTLSPolicy().(*unstructured.Unstructured)
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "sim-kserve-workload-svc"}, policy))
	hostname, _, _ := unstructured.NestedString(policy.Object, "spec", "validation", "hostname")
	if want := "sim-kserve-workload-svc." + e.ns + ".svc.cluster.local"; hostname != want {
		t.Errorf("BackendTLSPolicy hostname %q, want %q", hostname, want)
	}
	cm := &corev1.ConfigMap{}
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "odh-serving-ca-bundle"}, cm))
	if cm.Data["ca.crt"] == "" {
		t.Error("the CA bundle ConfigMap has no ca.crt")
	}
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.sys, Name: "odh-serving-ca-bundle"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a CA bundle Secret for a gateway that is not Istio's: %v", err)
	}
	e.assertSteadyState()
}

// TestCABundleOnlyWhereIstioGatewaysAre: the CA bundle Secret goes only to
// the namespaces of route parents that exist and are Istio's, and never
// over a Secret of its name that is not ours. A service whose gateway.refs
// name a made-up Gateway in kube-system writes nothing there, not even over
// a foreign Secret odh-serving-ca-bundle; one attached to a real Istio
// gateway whose namespace holds a foreign Secret of that name leaves it as
// it is and says so in RouterReady. kube-system and the gateway's namespace
// are watched, as every namespace is in the default install (a controller
// watching all namespaces would take the other tests' services here).
func TestCABundleOnlyWhereIstioGatewaysAre(t *testing.T) {
	ctx := context.Background()
	shared := testenv.NewNamespace(t, cp.Client, "gw")
	e := start(t, func(o *controller.Options) {
		o.WatchNamespaces = append(o.WatchNamespaces, metav1.NamespaceSystem, shared)
	})
	testenv.InstallCRDs(t, cp.Client, controlplane.PlatformCRDs...)
	class := "istio-" + e.ns
	e.gatewayClass(class, "istio.io/gateway-controller")
	e.gatewayOfClass(e.sys, "kserve-ingress-gateway", "gw.example.com", class)
	e.gatewayOfClass(shared, "shared", "shared.example.com", class)
	foreign := func(namespace string) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "odh-serving-ca-bundle"},
			Data:       map[string][]byte{"ca.crt": []byte("someone else's CA")},
		}
		e.must(e.c.Create(ctx, s))
		t.Cleanup(func() { _ = e.c.Delete(context.Background(), s) })
		return s
	}
	untouched := func(s *corev1.Secret) {
		t.Helper()
		live := &corev1.Secret{}
		e.must(e.c.Get(ctx, client.ObjectKeyFromObject(s), live))
		if live.ResourceVersion != s.ResourceVersion || string(live.Data["ca.crt"]) != "someone else's CA" || len(live.Labels) != 0 {
			t.Errorf("the foreign Secret %s/%s was written: resourceVersion %s (was %s), labels %v", s.Namespace, s.Name, live.ResourceVersion, s.ResourceVersion, live.Labels)
		}
	}
	wroteNothingIn := func(namespace string, since int) {
		t.Helper()
		for _, w := range e.rec.Since(since) {
			if strings.Contains(w, "/namespaces/"+namespace+"/") {
				t.Errorf("the controller wrote where no gateway of its own needs it: %s", w)
			}
		}
	}
	inKubeSystem, inShared := foreign(metav1.NamespaceSystem), foreign(shared)
	before := e.rec.Count()

	e.create(simService("sim", `    route: {}
    gateway:
      refs:
      - name: kserve-ingress-gateway
        namespace: `+e.sys+`
      - name: made-up
        namespace: kube-system
    scheduler: {}
`))
	e.waitExists(destinationRule, "sim-kserve-scheduler", "sim-kserve-workload-svc")
	ours := &corev1.Secret{}
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.sys, Name: "odh-serving-ca-bundle"}, ours))
	if ours.Labels["app.kubernetes.io/managed-by"] != "odh-serving" || len(ours.Data["ca.crt"]) == 0 {
		t.Errorf("the Istio gateway's CA bundle: labels %v, %d bytes; want ours, with the CA", ours.Labels, len(ours.Data["ca.crt"]))
	}

	untouched(inKubeSystem)
	wroteNothingIn(metav1.NamespaceSystem, before)

	before = e.rec.Count()
	e.create(simService("other", `    route: {}
    gateway:
      refs:
      - name: shared
        namespace: `+shared+`
    scheduler: {}
`))
	svc := e.waitCondition("other", v1alpha2.ConditionRouterReady, metav1.ConditionFalse, controller.ReasonReconcileError)
	if msg, want := cond(svc, v1alpha2.ConditionRouterReady).Message, "Secret "+shared+"/odh-serving-ca-bundle exists and is not managed by odh-serving"; !strings.Contains(msg, want) {
		t.Errorf("RouterReady message %q does not say %q", msg, want)
	}

	untouched(inShared)
	wroteNothingIn(shared, before)
}
