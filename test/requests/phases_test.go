package requests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/presets"
	"github.com/opendatahub-io/odh-serving/test/authpolicy"
	"github.com/opendatahub-io/odh-serving/test/endpointpicker"
	"github.com/opendatahub-io/odh-serving/test/gateway"
	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
	"github.com/opendatahub-io/odh-serving/test/modelserver"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func init() { testenv.InitLogger() }

// eppBinary is GIE's endpoint picker next to kube-apiserver.
func eppBinary(tb testing.TB) string {
	tb.Helper()
	p := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "epp")
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("no endpoint picker at %s: build it with `bash hack/setup-test-assets.sh epp`: %v", p, err)
	}
	return p
}

// TestPhases sends requests through the real endpoint picker for a service
// rendered in each migration phase that renders an endpoint picker.
func TestPhases(t *testing.T) {
	for _, phase := range []convention.Phase{convention.PhaseAlpha2, convention.PhaseDual, convention.PhaseV1, convention.PhaseRetired} {
		t.Run(string(phase), func(t *testing.T) { runPhase(t, phase) })
	}
}

// phaseEnv is a rendered service served through the endpoint picker.
type phaseEnv struct {
	c    client.Client
	ns   string
	url  string   // the service through the gateway
	pods []string // the pods' completions, directly
	// podNames are the workload's pods, in the order of pods.
	podNames []string
	send     func() (code int, pod string, err error)
	// answeredAt is the ip:port at which the last answer's model server
	// took the request (its X-Model-Server-Address), for failure messages.
	answeredAt func() string
	// podIPs are the workload's pods' IPs, in the order of podNames, as
	// they were when both pods were first Ready.
	podIPs []string
	gwLog  *testenv.Buffer
	log    *testenv.Buffer // the endpoint picker's
	// svc is the service as rendered, and phase its phase.
	svc   *v1alpha2.LLMInferenceService
	phase convention.Phase
	// With phaseOptions.auth: the route's AuthPolicy as applied, the
	// audiences it accepts, and a token of a ServiceAccount granted get
	// on the service (send uses it).
	routePolicy *unstructured.Unstructured
	audiences   []string
	token       string
}

// phaseOptions vary startPhase.
type phaseOptions struct {
	// responseTime is how long a completion takes; 0 is the simulator's
	// default.
	responseTime time.Duration
	// auth renders with --enable-auth, applies the chart's AuthPolicy of
	// the gateway and the service's own, and has the gateway enforce the
	// AuthPolicies in the cluster (gateway.AuthPolicies).
	auth bool
}

func runPhase(t *testing.T, phase convention.Phase) {
	t.Helper()
	e := startPhase(t, phase, phaseOptions{})
	c, ns, url, send, gwLog, log, ctx := e.c, e.ns, e.url, e.send, e.gwLog, e.log, t.Context()
	// The endpoint picker knows both pods before one is taken away: with
	// one of them missing from its view, "no more requests to the pod that
	// is not Ready" would prove nothing.
	testenv.Eventually(t, "the endpoint picker routes to both pods", func() error {
		seen := map[string]string{}
		for range 10 {
			_, pod, err := send()
			if err != nil {
				return err
			}
			seen[pod] = e.answeredAt()
		}
		if len(seen) != 2 {
			return fmt.Errorf("10 requests answered only by %v (pod: address); the pods: %v at %v", seen, e.podNames, e.podIPs)
		}
		return nil
	})
	gwLog.Reset()
	served := map[string]int{}
	for range 20 {
		_, pod, err := send()
		if err != nil {
			t.Fatalf("a request after the first: %v", err)
		}
		served[pod]++
	}
	t.Logf("phase %s: 20 requests through the endpoint picker, per pod %v", phase, served)
	if l := gwLog.String(); l != "" {
		t.Errorf("the gateway did not take every request through the endpoint picker:\n%s", l)
	}
	// A model no pod serves: the endpoint picker passes it on, and the pod
	// answers as vLLM does.
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"model":"no-such-model","prompt":"hi"}`)) //nolint:gosec // the service's URL at the test gateway's loopback address
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "The model `no-such-model` does not exist.") {
		t.Errorf("an unknown model: %d %s; want 404 from the model server", resp.StatusCode, body)
	}

	// A pod made not Ready gets no more requests; with none Ready, the
	// endpoint picker answers 503.
	// kwok plays a failing readiness probe on a labelled pod
	// (test/kwokcluster/stages/readiness.yaml): no status is written here.
	notReady := func(name string) {
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = ns, name
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, kwokcluster.ReadinessLabel, kwokcluster.ReadinessFails)
		if err := c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "pod "+name+" not Ready", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				return err
			}
			if podReady(pod) {
				return errors.New("still Ready")
			}
			return nil
		})
	}
	notReady(e.podNames[0])
	testenv.Eventually(t, "10 requests in a row to "+e.podNames[1]+" alone", func() error {
		for range 10 {
			_, pod, err := send()
			if err != nil {
				return fmt.Errorf("answered at %q (the pods: %v at %v): %w", e.answeredAt(), e.podNames, e.podIPs, err)
			}
			if pod != e.podNames[1] {
				return fmt.Errorf("pod %q answered at %s (the pods: %v at %v)", pod, e.answeredAt(), e.podNames, e.podIPs)
			}
		}
		return nil
	})
	notReady(e.podNames[1])
	testenv.Eventually(t, "503 with no Ready pod", func() error {
		code, pod, err := send()
		if code != http.StatusServiceUnavailable {
			return fmt.Errorf("status %d from pod %q: %w", code, pod, err)
		}
		return nil
	})

	// client-go reports an RBAC denial as "<resource> is forbidden: User ...
	// cannot list ...". A bare "403" is no evidence: it occurs inside UIDs,
	// ports and times (CI saw "-403d" in a UID on 2026-11-27).
	if m := regexp.MustCompile(`(?i)\bforbidden\b`).FindString(log.String()); m != "" {
		t.Errorf("the endpoint picker's log shows a 403 (%q): the rendered RBAC is not enough", m)
	}
}

// startPhase renders the service for the phase, applies it, starts the
// pods' model servers, the endpoint picker and the gateway, and returns
// once a request went through the endpoint picker.
func startPhase(tb testing.TB, phase convention.Phase, o phaseOptions) *phaseEnv {
	tb.Helper()
	epp := eppBinary(tb)
	nodes.Need(tb)
	c := cp.Client
	ctx := tb.Context()
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		tb.Fatal(err)
	}
	// The phase's namespace holds all of it but the route's Gateway, and
	// it reads nothing outside but the Gateway. The namespace is deleted
	// when the phase ends (kube-controller-manager's namespace controller
	// and kwok's pod-delete stage remove its objects and pods), after its
	// model servers, endpoint picker and gateway router stopped; the next
	// phase does not wait for that.
	ns := testenv.NewNamespace(tb, c, "team")
	tb.Cleanup(func() {
		if err := c.Delete(context.WithoutCancel(ctx), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			tb.Errorf("delete namespace %s: %v", ns, err)
		}
	})

	// Render a CPU-simulator service for the phase.
	svc := &v1alpha2.LLMInferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "LLMInferenceService"},
		ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: ns},
		Spec: v1alpha2.LLMInferenceServiceSpec{
			Model:        v1alpha2.LLMModelSpec{Name: ptrTo("Qwen/Qwen2.5-7B-Instruct")},
			WorkloadSpec: v1alpha2.WorkloadSpec{Replicas: ptrTo(int32(2))},
			BaseRefs:     []corev1.LocalObjectReference{{Name: "kserve-config-llm-cpu-simulator"}},
			Router:       &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}, Scheduler: &v1alpha2.SchedulerSpec{}},
		},
	}
	res := render(tb, svc, phase, o.auth)

	// The serving certificate the controller would make, for the pods and
	// the endpoint picker.
	now := time.Now()
	ca, err := certs.NewCA("test", now, time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	leaf, err := certs.Issue(ca, []string{"qwen-epp-service." + ns + ".svc"}, now, time.Hour)
	if err != nil {
		tb.Fatal(err)
	}

	var workload, scheduler *appsv1.Deployment
	var route *gatewayv1.HTTPRoute
	for i, o := range res.Objects {
		switch res.Children[i].Role {
		case engine.RoleMain:
			workload = o.(*appsv1.Deployment)
			continue
		case engine.RoleScheduler:
			scheduler = o.(*appsv1.Deployment)
			continue
		}
		switch o := o.(type) {
		case *appsv1.Deployment:
			continue
		case *gatewayv1.HTTPRoute:
			route = o
		case *corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding, *corev1.Service:
		default:
			if !strings.Contains(o.GetObjectKind().GroupVersionKind().Kind, "InferencePool") {
				continue
			}
		}
		if err := c.Create(ctx, o.DeepCopyObject().(client.Object)); err != nil {
			tb.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	if workload == nil || scheduler == nil || route == nil {
		tb.Fatalf("phase %s: rendered no workload, endpoint picker or route", phase)
		return nil
	}
	// The Secret the pods mount.
	for _, v := range workload.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v.Secret.SecretName}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM}}
			if err := c.Create(ctx, s); err != nil {
				tb.Fatal(err)
			}
		}
	}

	// The workload: its Deployment's two pods, scheduled by
	// kube-scheduler and run by kwok at loopback IPs of the cluster's own,
	// where the model-server simulator answers.
	fleet := modelserver.NewFleet(modelserver.ClientSecrets(cs), modelserver.Options{ResponseTime: o.responseTime, Namespace: ns})
	testenv.Start(tb, "model servers", func(ctx context.Context) error { return fleet.Run(ctx, cs) })
	if err := c.Create(ctx, workload.DeepCopy()); err != nil {
		tb.Fatalf("create Deployment %s: %v", workload.Name, err)
	}
	var podNames, podIPs []string
	testenv.Within(tb, time.Minute, "the workload's two pods Running and Ready", func() error {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(workload.Spec.Template.Labels)); err != nil {
			return err
		}
		podNames, podIPs = nil, nil
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && podReady(p) {
				podNames, podIPs = append(podNames, p.Name), append(podIPs, p.Status.PodIP)
			}
		}
		if len(podNames) != 2 {
			return fmt.Errorf("%d of %d pods Running and Ready", len(podNames), len(pods.Items))
		}
		return nil
	})
	if podIPs[0] == podIPs[1] {
		tb.Fatalf("kwok gave both pods %v the IP %s", podNames, podIPs[0])
	}

	// The endpoint picker: the rendered args, its listen ports (claimed
	// for it: endpointpicker.Start) and certificate folder changed, its
	// configuration adapted, as the rendered ServiceAccount.
	main := scheduler.Spec.Template.Spec.Containers[0]
	certDir := tb.TempDir()
	for name, data := range map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	args := slices.Clone(main.Args)
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--cert-path":
			args[i+1] = certDir
		case "--config-text":
			adapted, err := endpointpicker.Adapt(args[i+1])
			if err != nil {
				tb.Fatal(err)
			}
			if !adapted.Runnable() {
				tb.Fatalf("the default profile is not runnable by GIE's endpoint picker: %q", adapted.Unrunnable)
			}
			args[i+1] = adapted.Config
		}
	}
	// --v 4: the log (shown when the test fails) has the endpoint
	// picker's pool and pod events: which pods it added and removed, when.
	args = append(args, "--v", "4")
	token, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, scheduler.Spec.Template.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("a token of the rendered ServiceAccount %s: %v", scheduler.Spec.Template.Spec.ServiceAccountName, err)
	}
	kubeconfig := testenv.Kubeconfig(tb, &rest.Config{Host: cp.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cp.Config.CAData}, BearerToken: token.Status.Token}, ns)
	log := &testenv.Buffer{}
	picker, err := endpointpicker.Start(epp, args, kubeconfig, log)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		picker.Stop()
		if tb.Failed() || testing.Verbose() {
			tb.Logf("endpoint picker %s, log:\n%s", strings.Join(picker.Args, " "), log.String())
		}
	})
	// The gateway asks the endpoint picker at its address only once it is
	// this process that listens there.
	servingCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := picker.Serving(servingCtx); err != nil {
		tb.Fatal(err)
	}

	// The gateway: the rendered route on its Gateway, the endpoint picker
	// Service mapped to the process. Every phase's route names the same
	// Gateway: the first phase creates it, and each phase serves it with a
	// router of its own.
	gw := &gatewayv1.Gateway{}
	ref := route.Spec.ParentRefs[0]
	gw.Namespace, gw.Name = string(*ref.Namespace), string(ref.Name)
	gw.Spec = gatewayv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
		AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromAll)}}}}}
	testenv.EnsureNamespace(tb, c, gw.Namespace)
	if err := c.Create(ctx, gw.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatal(err)
	}
	// The gateway reads its configuration through informers, as a gateway
	// controller watches it, so that a request costs no API server reads.
	informers, err := cache.New(cp.Config, cache.Options{Scheme: c.Scheme()})
	if err != nil {
		tb.Fatal(err)
	}
	cacheCtx, stopCache := context.WithCancel(context.WithoutCancel(ctx))
	tb.Cleanup(stopCache)
	go func() { _ = informers.Start(cacheCtx) }()
	if !informers.WaitForCacheSync(ctx) {
		tb.Fatal("the gateway's informers did not sync")
	}
	gwLog := &testenv.Buffer{}
	gwOpts := gateway.Options{Log: gwLog, EndpointPicker: func(context.Context, string, string, int32) (string, bool, error) {
		return picker.Addr, true, nil
	}}
	e := &phaseEnv{c: c, ns: ns, gwLog: gwLog, log: log, svc: svc, phase: phase}
	if o.auth {
		e.routePolicy, e.audiences, e.token = protect(tb, c, gw, svc, res)
		gwOpts.Authorizer = gateway.AuthPolicies{Reader: informers, Reviewer: authpolicy.Authorizer{Client: c}}
	}
	router := gateway.NewRouter(informers, gwOpts)
	tb.Cleanup(router.Close)
	srv := httptest.NewServer(router.Handler(types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}, "http"))
	tb.Cleanup(srv.Close)

	// Requests, once the endpoint picker is up and has the pool: one that
	// it answered (no fallback of the gateway's) with a pod.
	url := fmt.Sprintf("%s/%s/qwen/v1/completions", srv.URL, ns)
	var lastAt atomic.Value
	lastAt.Store("")
	e.answeredAt = func() string { return lastAt.Load().(string) }
	send := func() (int, string, error) {
		lastAt.Store("")
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"Qwen/Qwen2.5-7B-Instruct","prompt":"hi","max_tokens":5}`))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", "application/json")
		if e.token != "" {
			req.Header.Set("Authorization", "Bearer "+e.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		lastAt.Store(resp.Header.Get("X-Model-Server-Address"))
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, "", fmt.Errorf("status %d: %s", resp.StatusCode, body)
		}
		return resp.StatusCode, resp.Header.Get("X-Model-Server-Pod"), nil
	}
	testenv.Eventually(tb, "a request answered through the endpoint picker", func() error {
		gwLog.Reset()
		if _, _, err := send(); err != nil {
			return fmt.Errorf("%w; the gateway says: %s", err, gwLog.String())
		}
		if l := gwLog.String(); l != "" {
			return fmt.Errorf("the gateway did not go through the endpoint picker: %s", l)
		}
		return nil
	})
	var pods []string
	for _, ip := range podIPs {
		pods = append(pods, fmt.Sprintf("https://%s/v1/completions", net.JoinHostPort(ip, "8000")))
	}
	e.url, e.pods, e.podNames, e.podIPs, e.send = url, pods, podNames, podIPs, send
	return e
}

// render renders svc with the default presets for the phase, with
// --enable-auth when auth.
func render(tb testing.TB, svc *v1alpha2.LLMInferenceService, phase convention.Phase, auth bool) *engine.Result {
	tb.Helper()
	catalog, err := presets.Default(nil)
	if err != nil {
		tb.Fatal(err)
	}
	images, err := presets.Images()
	if err != nil {
		tb.Fatal(err)
	}
	res, err := engine.Render(tb.Context(), svc, catalog, engine.Options{Images: images, Phase: phase, Auth: auth})
	if err != nil {
		tb.Fatalf("render %s/%s: %v", svc.Namespace, svc.Name, err)
	}
	return res
}

func ptrTo[T any](v T) *T { return &v }

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
