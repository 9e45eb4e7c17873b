package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	envoycorev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	envoytypev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/test/modelserver"
)

func prefix(v string) *gatewayv1.HTTPPathMatch {
	return &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(v)}
}

func exact(v string) *gatewayv1.HTTPPathMatch {
	return &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchExact), Value: ptr.To(v)}
}

// TestRoutePrecedence checks the rule chosen among matching ones.
func TestRoutePrecedence(t *testing.T) {
	old := metav1.NewTime(time.Unix(1000, 0))
	young := metav1.NewTime(time.Unix(2000, 0))
	rt := func(name string, created metav1.Time, rules ...gatewayv1.HTTPRouteRule) *gatewayv1.HTTPRoute {
		return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: created}, Spec: gatewayv1.HTTPRouteSpec{Rules: rules}}
	}
	rule := func(name string, ms ...gatewayv1.HTTPRouteMatch) gatewayv1.HTTPRouteRule {
		return gatewayv1.HTTPRouteRule{Name: ptr.To(gatewayv1.SectionName(name)), Matches: ms}
	}
	routes := []*gatewayv1.HTTPRoute{
		rt("b", young,
			rule("b-prefix-a", gatewayv1.HTTPRouteMatch{Path: prefix("/a")}),
			rule("b-prefix-ab-header", gatewayv1.HTTPRouteMatch{Path: prefix("/a/b"), Headers: []gatewayv1.HTTPHeaderMatch{{Name: "X-Tier", Value: "gold"}}}),
		),
		rt("a", old,
			rule("a-prefix-ab", gatewayv1.HTTPRouteMatch{Path: prefix("/a/b")}),
			rule("a-exact", gatewayv1.HTTPRouteMatch{Path: exact("/a/b/c")}),
			rule("a-all"),
			rule("a-post", gatewayv1.HTTPRouteMatch{Path: prefix("/x"), Method: ptr.To(gatewayv1.HTTPMethodPost)}),
			rule("a-query", gatewayv1.HTTPRouteMatch{Path: prefix("/x"), QueryParams: []gatewayv1.HTTPQueryParamMatch{{Name: "v", Value: "1"}}}),
		),
	}
	for _, c := range []struct {
		method, target string
		header         http.Header
		want           string
	}{
		{"GET", "/a/b/c", nil, "a-exact"},
		{"GET", "/a/b/c/d", nil, "a-prefix-ab"},                                    // the oldest route among equal prefixes
		{"GET", "/a/b/c/d", http.Header{"X-Tier": {"gold"}}, "b-prefix-ab-header"}, // a header match beats none
		{"GET", "/a/bc", nil, "b-prefix-a"},                                        // /a/b does not take /a/bc
		{"GET", "/z", nil, "a-all"},
		{"POST", "/x?v=1", nil, "a-post"}, // a method beats a query
		{"GET", "/x?v=1", nil, "a-query"},
	} {
		req := httptest.NewRequest(c.method, c.target, nil)
		for k, v := range c.header {
			req.Header[k] = v
		}
		m, ok := route(routes, req)
		if !ok {
			t.Errorf("%s %s: no rule", c.method, c.target)
			continue
		}
		if got := string(*m.rule.Name); got != c.want {
			t.Errorf("%s %s %v: rule %s; want %s", c.method, c.target, c.header, got, c.want)
		}
	}
}

func TestRewritePath(t *testing.T) {
	rw := func(p string) *gatewayv1.HTTPPathModifier {
		return &gatewayv1.HTTPPathModifier{Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To(p)}
	}
	for _, c := range []struct {
		match, replace, path, want string
	}{
		{"/demo/qwen/v1/completions", "/v1/completions", "/demo/qwen/v1/completions", "/v1/completions"},
		{"/demo/qwen", "/", "/demo/qwen/v1/models", "/v1/models"},
		{"/demo/qwen/", "/", "/demo/qwen", "/"},
		{"/demo", "/x/", "/demo/y", "/x/y"},
	} {
		got := rewritePath(rw(c.replace), gatewayv1.HTTPRouteMatch{Path: prefix(c.match)}, c.path)
		if got != c.want {
			t.Errorf("rewrite %s (prefix %s -> %s) = %s; want %s", c.path, c.match, c.replace, got, c.want)
		}
	}
	full := &gatewayv1.HTTPPathModifier{Type: gatewayv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To("/health")}
	if got := rewritePath(full, gatewayv1.HTTPRouteMatch{}, "/anything"); got != "/health" {
		t.Errorf("full path rewrite = %s", got)
	}
}

// fakePicker is an endpoint picker speaking ext_proc as GIE's does: it
// answers the request headers and body once the body is complete, and
// passes the response through, marking its headers.
type fakePicker struct {
	extprocv3.UnimplementedExternalProcessorServer
	// choose returns the endpoint, or an HTTP status for an immediate
	// response.
	choose func(body string) (string, int)
	// seen, if set, gets the request headers the picker received
	// (pseudo-headers included).
	seen func(headers map[string]string)
}

func (f *fakePicker) Process(srv extprocv3.ExternalProcessor_ProcessServer) error {
	var body []byte
	for {
		req, err := srv.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch v := req.Request.(type) {
		case *extprocv3.ProcessingRequest_RequestHeaders:
			if f.seen != nil {
				h := map[string]string{}
				for _, kv := range v.RequestHeaders.GetHeaders().GetHeaders() {
					h[kv.GetKey()] = string(kv.GetRawValue()) + kv.GetValue()
				}
				f.seen(h)
			}
		case *extprocv3.ProcessingRequest_RequestBody:
			body = append(body, v.RequestBody.Body...)
			if !v.RequestBody.EndOfStream {
				continue
			}
			ep, code := f.choose(string(body))
			if code != 0 {
				return srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
					ImmediateResponse: &extprocv3.ImmediateResponse{Status: &envoytypev3.HttpStatus{Code: envoytypev3.StatusCode(code)}, Body: []byte("picker says no")},
				}})
			}
			if err := srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{
				Response: &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: []*envoycorev3.HeaderValueOption{
					{Header: &envoycorev3.HeaderValue{Key: DestinationEndpointHeader, RawValue: []byte(ep)}},
					{Header: &envoycorev3.HeaderValue{Key: "x-picked", RawValue: []byte("yes")}},
				}}},
			}}}); err != nil {
				return err
			}
			if err := srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{
				Response: &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_StreamedResponse{
					StreamedResponse: &extprocv3.StreamedBodyResponse{Body: body, EndOfStream: true},
				}}},
			}}}); err != nil {
				return err
			}
			body = nil
		case *extprocv3.ProcessingRequest_ResponseHeaders:
			if err := srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{
				Response: &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: []*envoycorev3.HeaderValueOption{
					{Header: &envoycorev3.HeaderValue{Key: "x-response-seen-by-picker", RawValue: []byte("yes")}},
				}}},
			}}}); err != nil {
				return err
			}
		case *extprocv3.ProcessingRequest_ResponseBody:
			if err := srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{
				Response: &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_StreamedResponse{
					StreamedResponse: &extprocv3.StreamedBodyResponse{Body: v.ResponseBody.Body, EndOfStream: v.ResponseBody.EndOfStream},
				}}},
			}}}); err != nil {
				return err
			}
		}
	}
}

func startPicker(t *testing.T, p *fakePicker) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	extprocv3.RegisterExternalProcessorServer(s, p)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

// world is a namespace with a Gateway, model-server pods served by the
// simulator, and what a test adds.
type world struct {
	t       *testing.T
	objs    []client.Object
	fleet   *modelserver.Fleet
	podIPs  map[string]string
	port    int32
	pickers map[string]string // endpoint picker Service -> address
}

func newWorld(t *testing.T, responseTime time.Duration) *world {
	t.Helper()
	fleet := modelserver.NewFleet(func(context.Context, string, string) (*corev1.Secret, error) {
		return nil, errors.New("no Secrets in this test")
	}, modelserver.Options{ResponseTime: responseTime})
	t.Cleanup(fleet.Close)
	w := &world{t: t, fleet: fleet, podIPs: map[string]string{}, port: int32(20000 + rand.IntN(20000)), pickers: map[string]string{}}
	w.objs = append(w.objs, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "gateway"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayv1.Listener{{
			Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromAll)}},
		}}},
	})
	return w
}

// pod adds a model-server pod and serves it.
func (w *world) pod(name string, ready bool, lbls map[string]string) {
	w.t.Helper()
	ip := fmt.Sprintf("127.%d.%d.%d", 100+rand.IntN(100), rand.IntN(256), 1+rand.IntN(254))
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	lbls["kserve.io/component"] = "workload"
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: lbls},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Args: []string{"--served-model-name", "org/model"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: w.port, Protocol: corev1.ProtocolTCP}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	if err := w.fleet.Apply(w.t.Context(), p); err != nil {
		w.t.Fatal(err)
	}
	w.podIPs[name] = ip
	w.objs = append(w.objs, p)
}

func (w *world) route(rules ...gatewayv1.HTTPRouteRule) {
	w.objs = append(w.objs, &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "route"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gateway", Namespace: ptr.To(gatewayv1.Namespace("gw"))}}},
			Rules:           rules,
		},
	})
}

func (w *world) service(name string, selector map[string]string) {
	w.objs = append(w.objs, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Spec:       corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Name: "http", Port: 8000, TargetPort: intstr.FromString("http")}}},
	})
}

func (w *world) poolV1(name string, selector map[string]string, failure gieapiv1.EndpointPickerFailureMode) {
	m := map[gieapiv1.LabelKey]gieapiv1.LabelValue{}
	for k, v := range selector {
		m[gieapiv1.LabelKey(k)] = gieapiv1.LabelValue(v)
	}
	w.objs = append(w.objs, &gieapiv1.InferencePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Spec: gieapiv1.InferencePoolSpec{
			Selector: gieapiv1.LabelSelector{MatchLabels: m}, TargetPorts: []gieapiv1.Port{{Number: gieapiv1.PortNumber(w.port)}},
			EndpointPickerRef: gieapiv1.EndpointPickerRef{Kind: "Service", Name: gieapiv1.ObjectName(name + "-epp"), Port: &gieapiv1.Port{Number: 9002}, FailureMode: failure},
		},
	})
}

func (w *world) poolAlpha2(name string, selector map[string]string) {
	m := map[gieapixv1alpha2.LabelKey]gieapixv1alpha2.LabelValue{}
	for k, v := range selector {
		m[gieapixv1alpha2.LabelKey(k)] = gieapixv1alpha2.LabelValue(v)
	}
	w.objs = append(w.objs, &gieapixv1alpha2.InferencePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Spec: gieapixv1alpha2.InferencePoolSpec{Selector: m, TargetPortNumber: w.port, ExtensionRef: gieapixv1alpha2.Extension{
			Name: gieapixv1alpha2.ObjectName(name + "-epp"), FailureMode: ptr.To(gieapixv1alpha2.FailClose),
		}},
	})
}

// serve starts the gateway's listener on a test server and returns its URL.
func (w *world) serve(opts Options) string {
	w.t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gieapiv1.Install, gieapixv1alpha2.Install, gatewayv1.Install} {
		if err := add(s); err != nil {
			w.t.Fatal(err)
		}
	}
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(w.objs...).Build()
	if opts.EndpointPicker == nil {
		opts.EndpointPicker = func(_ context.Context, _, svc string, _ int32) (string, bool, error) {
			if addr, ok := w.pickers[svc]; ok {
				return addr, false, nil
			}
			return "", false, fmt.Errorf("no endpoint picker %s", svc)
		}
	}
	r := NewRouter(reader, opts)
	w.t.Cleanup(r.Close)
	srv := httptest.NewServer(r.Handler(types.NamespacedName{Namespace: "gw", Name: "gateway"}, "http"))
	w.t.Cleanup(srv.Close)
	return srv.URL
}

func send(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

const completion = `{"model":"org/model","prompt":"hi"}`

func rewriteTo(p string) gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterURLRewrite, URLRewrite: &gatewayv1.HTTPURLRewriteFilter{
		Path: &gatewayv1.HTTPPathModifier{Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To(p)},
	}}
}

func backendRef(group, kind, name string, weight int32) gatewayv1.HTTPBackendRef {
	ref := gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{Weight: ptr.To(weight), BackendObjectReference: gatewayv1.BackendObjectReference{
		Name: gatewayv1.ObjectName(name), Port: ptr.To(gatewayv1.PortNumber(8000)),
	}}}
	if group != "" {
		ref.Group = ptr.To(gatewayv1.Group(group))
		ref.Kind = ptr.To(gatewayv1.Kind(kind))
	}
	return ref
}

// TestServiceBackend routes to a Service's Ready pods only, rewriting the
// path, and answers 503 when none is Ready.
func TestServiceBackend(t *testing.T) {
	w := newWorld(t, time.Millisecond)
	w.pod("ready", true, map[string]string{"app": "a"})
	w.pod("not-ready", false, map[string]string{"app": "a"})
	w.pod("other", true, map[string]string{"app": "b"})
	w.service("svc", map[string]string{"app": "a"})
	w.service("none-ready", map[string]string{"app": "nothing"})
	w.route(
		gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{{Path: prefix("/team/svc")}}, Filters: []gatewayv1.HTTPRouteFilter{rewriteTo("/")},
			BackendRefs: []gatewayv1.HTTPBackendRef{backendRef("", "", "svc", 1)}},
		gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{{Path: prefix("/team/empty")}}, Filters: []gatewayv1.HTTPRouteFilter{rewriteTo("/")},
			BackendRefs: []gatewayv1.HTTPBackendRef{backendRef("", "", "none-ready", 1)}},
	)
	url := w.serve(Options{})
	for range 10 {
		code, hdr, body := send(t, url+"/team/svc/v1/completions", completion)
		if code != http.StatusOK || hdr.Get("X-Model-Server-Pod") != "ready" {
			t.Fatalf("%d from pod %q: %s", code, hdr.Get("X-Model-Server-Pod"), body)
		}
	}
	if code, _, body := send(t, url+"/team/empty/v1/completions", completion); code != http.StatusServiceUnavailable || !strings.Contains(body, "no Ready pod") {
		t.Errorf("no Ready pod: %d %s", code, body)
	}
	if code, _, _ := send(t, url+"/elsewhere", completion); code != http.StatusNotFound {
		t.Errorf("no route: %d; want 404", code)
	}
}

// TestPoolBackend goes through the endpoint picker: its choice, its
// header mutations, its response phases; its immediate answers; and the
// pool's failureMode when it is unreachable.
func TestPoolBackend(t *testing.T) {
	w := newWorld(t, time.Millisecond)
	sel := map[string]string{"app": "pool"}
	w.pod("p1", true, map[string]string{"app": "pool"})
	w.pod("p2", true, map[string]string{"app": "pool"})
	var gotBody string
	w.pickers["open-epp"] = startPicker(t, &fakePicker{choose: func(body string) (string, int) {
		gotBody = body
		if strings.Contains(body, "shed") {
			return "", http.StatusTooManyRequests
		}
		return net.JoinHostPort(w.podIPs["p2"], fmt.Sprint(w.port)), 0
	}})
	w.poolV1("open", sel, gieapiv1.EndpointPickerFailOpen)
	w.poolV1("gone", sel, gieapiv1.EndpointPickerFailOpen) // no picker: fails open
	w.poolV1("closed", sel, gieapiv1.EndpointPickerFailClose)
	w.poolAlpha2("alpha", sel)
	rule := func(path string, refs ...gatewayv1.HTTPBackendRef) gatewayv1.HTTPRouteRule {
		return gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{{Path: prefix(path)}}, Filters: []gatewayv1.HTTPRouteFilter{rewriteTo("/v1/completions")}, BackendRefs: refs}
	}
	v1, alpha2 := gieapiv1.GroupVersion.Group, gieapixv1alpha2.GroupVersion.Group
	w.route(
		rule("/open", backendRef(v1, "InferencePool", "open", 100), backendRef(alpha2, "InferencePool", "alpha", 0)),
		rule("/gone", backendRef(v1, "InferencePool", "gone", 1)),
		rule("/closed", backendRef(v1, "InferencePool", "closed", 1)),
		rule("/alpha", backendRef(alpha2, "InferencePool", "alpha", 1)),
		rule("/missing", backendRef(v1, "InferencePool", "missing", 1)),
	)
	url := w.serve(Options{RejectAlpha2Pools: true})

	for range 5 {
		code, hdr, body := send(t, url+"/open", completion)
		if code != http.StatusOK || hdr.Get("X-Model-Server-Pod") != "p2" || hdr.Get("X-Response-Seen-By-Picker") != "yes" || !strings.Contains(body, "answered by pod team/p2") {
			t.Fatalf("through the picker: %d, pod %q, picker saw the response %q: %s", code, hdr.Get("X-Model-Server-Pod"), hdr.Get("X-Response-Seen-By-Picker"), body)
		}
	}
	if gotBody != completion {
		t.Errorf("the picker got body %q", gotBody)
	}
	if code, _, body := send(t, url+"/open", `{"model":"org/model","prompt":"shed"}`); code != http.StatusTooManyRequests || body != "picker says no" {
		t.Errorf("the picker's immediate answer: %d %q", code, body)
	}
	if code, hdr, _ := send(t, url+"/gone", completion); code != http.StatusOK || hdr.Get("X-Model-Server-Pod") == "" {
		t.Errorf("FailOpen without a picker: %d", code)
	}
	if code, _, body := send(t, url+"/closed", completion); code != http.StatusServiceUnavailable || !strings.Contains(body, "FailClose") {
		t.Errorf("FailClose without a picker: %d %s", code, body)
	}
	if code, _, body := send(t, url+"/alpha", completion); code != http.StatusInternalServerError || !strings.Contains(body, "InvalidKind") {
		t.Errorf("a v1alpha2 pool rejected: %d %s", code, body)
	}
	if code, _, body := send(t, url+"/missing", completion); code != http.StatusInternalServerError || !strings.Contains(body, "BackendNotFound") {
		t.Errorf("a missing pool: %d %s", code, body)
	}
}

// TestTimeouts answers 504 when the backend takes longer than the rule's
// backendRequest timeout.
func TestTimeouts(t *testing.T) {
	w := newWorld(t, time.Minute)
	w.pod("slow", true, map[string]string{"app": "slow"})
	w.service("slow", map[string]string{"app": "slow"})
	w.route(gatewayv1.HTTPRouteRule{
		Matches:     []gatewayv1.HTTPRouteMatch{{Path: prefix("/")}},
		BackendRefs: []gatewayv1.HTTPBackendRef{backendRef("", "", "slow", 1)},
		Timeouts:    &gatewayv1.HTTPRouteTimeouts{BackendRequest: ptr.To(gatewayv1.Duration("100ms"))},
	})
	url := w.serve(Options{})
	if code, _, body := send(t, url+"/v1/completions", completion); code != http.StatusGatewayTimeout {
		t.Errorf("%d %s; want 504", code, body)
	}
}

// TestWeights splits requests by weight between two Services.
func TestWeights(t *testing.T) {
	w := newWorld(t, time.Millisecond)
	w.pod("a", true, map[string]string{"app": "a"})
	w.pod("b", true, map[string]string{"app": "b"})
	w.service("a", map[string]string{"app": "a"})
	w.service("b", map[string]string{"app": "b"})
	w.route(gatewayv1.HTTPRouteRule{BackendRefs: []gatewayv1.HTTPBackendRef{backendRef("", "", "a", 3), backendRef("", "", "b", 1)}})
	url := w.serve(Options{})
	counts := map[string]int{}
	const n = 200
	for range n {
		code, hdr, body := send(t, url+"/v1/completions", completion)
		if code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		counts[hdr.Get("X-Model-Server-Pod")]++
	}
	// 3:1 of 200 is 150:50; a binomial spread of 6 standard deviations
	// (about 37) keeps this from failing by chance.
	if counts["a"] < 150-37 || counts["a"] > 150+37 || counts["a"]+counts["b"] != n {
		t.Errorf("spread %v; want about 150 a and 50 b", counts)
	}
}

// TestRouteFiltersAfterExtProc applies a route's filters where Envoy's
// router does, when the request goes upstream: the endpoint picker
// (ext_proc) sees the request as the client sent it, its path and its
// Authorization header; the pod gets the rewritten path and the header
// changes, removals first (a header the filter sets survives its own
// removal, as Envoy's remove-before-add).
func TestRouteFiltersAfterExtProc(t *testing.T) {
	w := newWorld(t, time.Millisecond)
	w.pod("p1", true, map[string]string{"app": "pool"})
	var seen map[string]string
	w.pickers["pool-epp"] = startPicker(t, &fakePicker{
		choose: func(string) (string, int) { return net.JoinHostPort(w.podIPs["p1"], fmt.Sprint(w.port)), 0 },
		seen:   func(h map[string]string) { seen = h },
	})
	w.poolV1("pool", map[string]string{"app": "pool"}, gieapiv1.EndpointPickerFailClose)
	strip := gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{
		Remove: []string{"Authorization"}, Set: []gatewayv1.HTTPHeader{{Name: "X-Team", Value: "a"}},
	}}
	replace := gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{
		Remove: []string{"Authorization"}, Set: []gatewayv1.HTTPHeader{{Name: "Authorization", Value: "Bearer upstream"}},
	}}
	pool := backendRef(gieapiv1.GroupVersion.Group, "InferencePool", "pool", 1)
	w.route(
		gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{{Path: prefix("/team/strip")}}, Filters: []gatewayv1.HTTPRouteFilter{rewriteTo("/v1/completions"), strip}, BackendRefs: []gatewayv1.HTTPBackendRef{pool}},
		gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{{Path: prefix("/team/replace")}}, Filters: []gatewayv1.HTTPRouteFilter{rewriteTo("/v1/completions"), replace}, BackendRefs: []gatewayv1.HTTPBackendRef{pool}},
	)
	url := w.serve(Options{})
	post := func(path string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+path, strings.NewReader(completion))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer caller")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
	last := func() modelserver.Received {
		t.Helper()
		got := w.fleet.Received("team", "p1")
		if len(got) == 0 {
			t.Fatal("the pod received nothing")
		}
		return got[len(got)-1]
	}

	post("/team/strip")
	if seen["authorization"] != "Bearer caller" || seen[":path"] != "/team/strip" || seen["x-team"] != "" {
		t.Errorf("the endpoint picker saw %v; want the request as the client sent it", seen)
	}
	if got := last(); got.Header.Get("Authorization") != "" || got.Header.Get("X-Team") != "a" || got.Path != "/v1/completions" {
		t.Errorf("the pod received %s with Authorization %q, X-Team %q; want /v1/completions, no Authorization, X-Team a",
			got.Path, got.Header.Get("Authorization"), got.Header.Get("X-Team"))
	}
	post("/team/replace")
	if got := last().Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer upstream" {
		t.Errorf("a filter that removes and sets Authorization: the pod received %q, want the set value alone", got)
	}
}
