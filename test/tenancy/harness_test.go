package tenancy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/presets"
	"github.com/opendatahub-io/odh-serving/test/authpolicy"
	"github.com/opendatahub-io/odh-serving/test/gateway"
	"github.com/opendatahub-io/odh-serving/test/modelserver"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// The tenants: two teams that share the cluster and its gateways.
const (
	TeamA = "team-a"
	TeamB = "team-b"
)

// Model is the model the tenants' services serve (spec.model.name): its
// slash makes the publisher path /publishers/<ns>/models/Qwen/Qwen2.5-0.5B-Instruct/...
const Model = "Qwen/Qwen2.5-0.5B-Instruct"

// RequestMarkHeader marks each request the harness sends with a number of
// its own, so a test finds it among those a pod received
// (Harness.Received).
const RequestMarkHeader = "X-Tenancy-Request"

// Harness is one test's view of the shared cluster: the ingress Gateway
// protected by the chart's AuthPolicies, served by the test gateway that
// enforces every AuthPolicy in the cluster, and the model servers.
type Harness struct {
	// C is an administrator's client.
	C  client.Client
	cs kubernetes.Interface
	// Ingress is the ingress Gateway, opendatahub/kserve-ingress-gateway,
	// as the engine's routes name it by default.
	Ingress types.NamespacedName
	// URL is the ingress Gateway's listener "http", served by the test
	// gateway.
	URL string
	// Audiences are those the chart's controller renders the services'
	// AuthPolicies for (--auth-audiences); Token asks for them.
	Audiences []string
	// ChartPolicies are the AuthPolicies of `helm template` with
	// auth.enabled=true, as applied.
	ChartPolicies []*unstructured.Unstructured
	// Fleet answers the tenants' pods and records what they received.
	Fleet *modelserver.Fleet
	// GatewayLog has a line per request that failed in the test gateway.
	GatewayLog *testenv.Buffer

	reader cache.Cache
	router *gateway.Router
	leaf   *certs.KeyPair
	mark   atomic.Int64
}

// New starts a test's harness on the package's cluster: the tenants'
// namespaces (kept between tests), the ingress Gateway and the chart's
// AuthPolicies (deleted when the test ends), the model-server simulator and
// the test gateway.
func New(t *testing.T) *Harness {
	t.Helper()
	nodes.Need(t)
	c := cp.Client
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{C: c, cs: cs, GatewayLog: &testenv.Buffer{},
		Ingress: types.NamespacedName{Namespace: engine.DefaultSystemNamespace, Name: convention.IngressGatewayName}}
	for _, ns := range []string{TeamA, TeamB, h.Ingress.Namespace} {
		testenv.EnsureNamespace(t, c, ns)
	}

	// The ingress Gateway, admitting routes from every namespace as the
	// chart's does.
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.Ingress.Namespace, Name: h.Ingress.Name},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayv1.Listener{{
			Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr(gatewayv1.NamespacesFromAll)}},
		}}},
	}
	h.Create(t, gw)

	// The chart's AuthPolicies with auth on, and the audiences its
	// controller renders the services' policies for.
	policies, audiences := chartAuth(t, h.Ingress)
	for _, p := range policies {
		if _, err := authpolicy.Parse(p); err != nil {
			t.Fatal(err)
		}
		h.Create(t, p)
		h.ChartPolicies = append(h.ChartPolicies, p)
	}
	h.Audiences = audiences

	// The serving certificate the controller would write for the pods.
	now := time.Now()
	ca, err := certs.NewCA("tenancy", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if h.leaf, err = certs.Issue(ca, []string{"model-server"}, now, time.Hour); err != nil {
		t.Fatal(err)
	}

	// The model servers: every pod of the cluster, which only this
	// package's tests use, one test at a time.
	h.Fleet = modelserver.NewFleet(modelserver.ClientSecrets(cs), modelserver.Options{})
	testenv.Start(t, "model servers", func(ctx context.Context) error { return h.Fleet.Run(ctx, cs) })

	// The test gateway: it reads through informers, as a gateway
	// controller watches the cluster, and enforces the AuthPolicies.
	informers, err := cache.New(cp.Config, cache.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	cacheCtx, stopCache := context.WithCancel(context.WithoutCancel(ctx))
	t.Cleanup(stopCache)
	go func() { _ = informers.Start(cacheCtx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("the test gateway's informers did not sync")
	}
	h.reader = informers
	h.router = gateway.NewRouter(informers, gateway.Options{Log: h.GatewayLog,
		Authorizer: gateway.AuthPolicies{Reader: informers, Reviewer: authpolicy.Authorizer{Client: c}}})
	t.Cleanup(h.router.Close)
	srv := httptest.NewServer(h.router.Handler(h.Ingress, "http"))
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the test gateway's log:\n%s", h.GatewayLog.String())
		}
	})
	// The gateway sees what was applied before it answers.
	for _, p := range h.ChartPolicies {
		h.waitCached(t, p)
	}
	h.waitCached(t, gw)
	return h
}

// chartOutput is `helm template` of the chart with auth.enabled=true, once
// per process: it does not change.
var chartOutput struct {
	once sync.Once
	out  string
	err  error
}

// chartAuth are the AuthPolicies the chart renders, with
// auth.enabled=true, for the ingress Gateway gw, and the audiences its
// controller's --auth-audiences names.
func chartAuth(t *testing.T, gw types.NamespacedName) ([]*unstructured.Unstructured, []string) {
	t.Helper()
	chartOutput.once.Do(func() {
		helm := testenv.HelmFor(t, "helm", "")
		chartOutput.out, chartOutput.err = helm.Run(context.WithoutCancel(t.Context()), "template", "odh-serving", "../../charts/odh-serving",
			"--namespace", gw.Namespace, "--set", "auth.enabled=true", "--set", "gateways.ingress.name="+gw.Name)
	})
	if chartOutput.err != nil {
		t.Fatalf("helm template: %v", chartOutput.err)
	}
	docs, err := manifest.Split("helm template", []byte(chartOutput.out))
	if err != nil {
		t.Fatal(err)
	}
	var policies []*unstructured.Unstructured
	var audiences []string
	for _, d := range docs {
		o := d.Object
		switch o.GetKind() {
		case "AuthPolicy":
			ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "targetRef")
			if ref["kind"] == "Gateway" && ref["name"] == gw.Name && o.GetNamespace() == gw.Namespace {
				policies = append(policies, o)
			}
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				args, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
				for _, a := range args {
					if v, ok := strings.CutPrefix(a, "--auth-audiences="); ok {
						audiences = strings.Split(v, ",")
					}
				}
			}
		}
	}
	if len(policies) == 0 {
		t.Fatalf("helm template with auth.enabled=true: no AuthPolicy targets Gateway %s", gw)
	}
	if len(audiences) == 0 {
		t.Fatal("helm template with auth.enabled=true: the controller has no --auth-audiences")
	}
	return policies, audiences
}

// Create creates obj and deletes it when the test ends.
func (h *Harness) Create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := h.C.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	t.Cleanup(func() {
		if err := h.C.Delete(context.WithoutCancel(t.Context()), obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
		}
	})
}

// waitCached waits until the test gateway's informers hold obj.
func (h *Harness) waitCached(t *testing.T, obj client.Object) {
	t.Helper()
	u := &unstructured.Unstructured{}
	gvk, err := h.C.GroupVersionKindFor(obj)
	if err != nil {
		t.Fatal(err)
	}
	u.SetGroupVersionKind(gvk)
	testenv.Eventually(t, fmt.Sprintf("the test gateway sees %s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName()), func() error {
		if _, ok := obj.(*unstructured.Unstructured); ok {
			return h.reader.Get(t.Context(), client.ObjectKeyFromObject(obj), u)
		}
		return h.reader.Get(t.Context(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	})
}

// Service is a tenant's LLMInferenceService named name in namespace: one
// replica of the CPU simulator serving Model, its managed route on the
// ingress Gateway, no endpoint picker (the route sends to the workload
// Service). annotations are the service's.
func Service(namespace, name string, annotations map[string]string) *v1alpha2.LLMInferenceService {
	return &v1alpha2.LLMInferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "LLMInferenceService"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: annotations},
		Spec: v1alpha2.LLMInferenceServiceSpec{
			Model:        v1alpha2.LLMModelSpec{Name: ptr(Model)},
			WorkloadSpec: v1alpha2.WorkloadSpec{Replicas: ptr(int32(1))},
			BaseRefs:     []corev1.LocalObjectReference{{Name: "kserve-config-llm-cpu-simulator"}},
			Router:       &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}},
		},
	}
}

// Options are the engine options the harness renders with: auth on and
// the audiences, as the chart runs the controller (--enable-auth,
// --auth-audiences). A test may change them before Deploy.
func (h *Harness) Options() engine.Options {
	images, err := presets.Images()
	if err != nil {
		panic(fmt.Sprintf("the presets' images: %v", err))
	}
	return engine.Options{Images: images, Auth: true, AuthAudiences: h.Audiences}
}

// Deployed is a service as the harness applied it.
type Deployed struct {
	Service *v1alpha2.LLMInferenceService
	Result  *engine.Result
	// Pods are the main workload's Ready pods (namespace/name).
	Pods []string
}

// Deploy renders svc with opts, applies every child as the controller
// would (the route and the AuthPolicies included), with the serving
// certificate Secret the pods mount, and waits until its pods are Ready,
// answered by the model-server simulator, and its route and AuthPolicies
// are in the test gateway's view. Everything goes when the test ends, and
// the test waits until the pods are gone.
func (h *Harness) Deploy(t *testing.T, svc *v1alpha2.LLMInferenceService, opts engine.Options) *Deployed {
	t.Helper()
	ctx := t.Context()
	catalog, err := presets.Default(nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.Render(ctx, svc, catalog, opts)
	if err != nil {
		t.Fatalf("render %s/%s: %v", svc.Namespace, svc.Name, err)
	}
	podLabels := map[string]string{convention.LabelName: svc.Name, convention.LabelPartOf: convention.PartOf}
	// When the test ends the pods go (the Deployment's deletion reaches
	// them through the garbage collector and kwok), and the next test, or
	// the next run, waits for that: its service has the same name. This
	// cleanup is registered before the objects' deletions, so it runs
	// after them.
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		testenv.Within(t, 2*time.Minute, fmt.Sprintf("the pods of %s/%s gone", svc.Namespace, svc.Name), func() error {
			pods := &corev1.PodList{}
			if err := h.C.List(ctx, pods, client.InNamespace(svc.Namespace), client.MatchingLabels(podLabels)); err != nil {
				return err
			}
			if n := len(pods.Items); n > 0 {
				return fmt.Errorf("%d left", n)
			}
			return nil
		})
	})

	var selector map[string]string
	for i, o := range res.Objects {
		switch res.Children[i].Role {
		case engine.RoleCertificate:
			// cert-manager's: not installed here; the Secret below is
			// what it would make.
			continue
		case engine.RoleMain:
			dep, ok := o.(*appsv1.Deployment)
			if !ok {
				t.Fatalf("%s/%s: the main workload is a %T, want a Deployment", svc.Namespace, svc.Name, o)
			}
			selector = dep.Spec.Template.Labels
		}
		h.Create(t, o.DeepCopyObject().(client.Object))
	}
	if selector == nil {
		t.Fatalf("%s/%s: no main workload rendered", svc.Namespace, svc.Name)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: res.Names.TLSSecret}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: h.leaf.CertPEM, corev1.TLSPrivateKeyKey: h.leaf.KeyPEM}}
	h.Create(t, secret)
	d := &Deployed{Service: svc, Result: res}
	testenv.Within(t, 2*time.Minute, fmt.Sprintf("the pods of %s/%s Ready and answered by the simulator", svc.Namespace, svc.Name), func() error {
		pods := &corev1.PodList{}
		if err := h.C.List(ctx, pods, client.InNamespace(svc.Namespace), client.MatchingLabels(selector)); err != nil {
			return err
		}
		served := map[string]bool{}
		for _, p := range h.Fleet.Served() {
			served[p] = true
		}
		d.Pods = nil
		for i := range pods.Items {
			p := &pods.Items[i]
			key := p.Namespace + "/" + p.Name
			if p.DeletionTimestamp == nil && podReady(p) && served[key] {
				d.Pods = append(d.Pods, key)
			}
		}
		if len(d.Pods) == 0 {
			return fmt.Errorf("none of %d pods Ready and served (served: %v)", len(pods.Items), h.Fleet.Served())
		}
		return nil
	})
	for i, o := range res.Objects {
		switch res.Children[i].Role {
		case engine.RoleRoute, engine.RoleAuth, engine.RoleWorkloadService:
			h.waitCached(t, o)
		}
	}
	return d
}

// Grant lets the ServiceAccount sa get the LLMInferenceService name in
// namespace (every service there when name is ""), through a Role and a
// RoleBinding deleted when the test ends.
func (h *Harness) Grant(t *testing.T, namespace, name string, sa types.NamespacedName) {
	t.Helper()
	rule := rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"llminferenceservices"}, Verbs: []string{"get"}}
	roleName := "tenancy-get-all"
	if name != "" {
		rule.ResourceNames = []string{name}
		roleName = "tenancy-get-" + name
	}
	roleName += "-" + sa.Namespace + "-" + sa.Name
	h.Create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: roleName}, Rules: []rbacv1.PolicyRule{rule}})
	h.Create(t, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: roleName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
	})
}

// Token returns a token of the ServiceAccount sa (made if missing, and
// kept: its namespace outlives the test) for the chart policy's audiences,
// as `kubectl create token` gives one.
func (h *Harness) Token(t *testing.T, sa types.NamespacedName) string {
	t.Helper()
	testenv.EnsureNamespace(t, h.C, sa.Namespace)
	obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: sa.Namespace, Name: sa.Name}}
	if err := h.C.Create(t.Context(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: h.Audiences}}
	if err := h.C.SubResource("token").Create(t.Context(), obj, tr); err != nil {
		t.Fatalf("a token of ServiceAccount %s: %v", sa, err)
	}
	return tr.Status.Token
}

// Request is what a caller sends through the ingress Gateway.
type Request struct {
	// Path, e.g. /team-a/qwen/v1/chat/completions.
	Path string
	// Token, if set, goes in Authorization: Bearer.
	Token string
	// Header are more headers.
	Header map[string]string
	// Body is the JSON body; default: a chat completion of Model.
	Body string
}

// Response is what the caller got.
type Response struct {
	Code   int
	Header http.Header
	Body   string
	// Mark is the request's RequestMarkHeader value.
	Mark string
}

// Pod is the pod that answered (namespace-less name), or "".
func (r Response) Pod() string { return r.Header.Get("X-Model-Server-Pod") }

// String says what came back, for failure messages.
func (r Response) String() string {
	s := fmt.Sprintf("%d", r.Code)
	if p := r.Pod(); p != "" {
		s += " from pod " + p
	}
	if p := r.Header.Get(gateway.AuthPolicyHeader); p != "" {
		s += " refused by AuthPolicy " + p
	}
	if why := r.Header.Get("X-Ext-Auth-Reason"); why != "" {
		s += " (" + why + ")"
	}
	return s + ": " + strings.TrimSpace(r.Body)
}

// Send sends req through the ingress Gateway as a POST.
func (h *Harness) Send(t *testing.T, req Request) Response {
	t.Helper()
	body := req.Body
	if body == "" {
		body = chatBody(Model)
	}
	r, err := http.NewRequestWithContext(t.Context(), http.MethodPost, h.URL+req.Path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	if req.Token != "" {
		r.Header.Set("Authorization", "Bearer "+req.Token)
	}
	for k, v := range req.Header {
		r.Header.Set(k, v)
	}
	mark := strconv.FormatInt(h.mark.Add(1), 10)
	r.Header.Set(RequestMarkHeader, mark)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return Response{Code: resp.StatusCode, Header: resp.Header, Body: string(b), Mark: mark}
}

// chatBody is a chat completion's body for model.
func chatBody(model string) string {
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"max_tokens":5}`, model)
}

// Received is the request resp answered, as the pod received it; false
// when no pod received it.
func (h *Harness) Received(resp Response) (modelserver.Received, bool) {
	got := h.Fleet.ReceivedWith(RequestMarkHeader, resp.Mark)
	if len(got) == 0 {
		return modelserver.Received{}, false
	}
	return got[len(got)-1], true
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
