package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/test/podwatch"
)

// Headers the test gateway adds to its responses, so that a test or the
// demo sees how a request was routed.
const (
	// BackendHeader names the backend chosen by weight: "Kind name.group"
	// (the group is empty for a Service).
	BackendHeader = "X-Test-Gateway-Backend"
	// PickedByHeader says who chose the pod of an InferencePool backend.
	PickedByHeader = "X-Test-Gateway-Picked-By"
	// PickedByEndpointPicker: the pool's endpoint picker.
	PickedByEndpointPicker = "endpoint-picker"
	// PickedByFailOpen: the gateway, at random among the Ready pods,
	// because the endpoint picker failed and the pool fails open.
	PickedByFailOpen = "failure-mode-open"
)

// EndpointPickerFunc says where the endpoint picker behind a Service port
// listens, and whether it serves TLS.
type EndpointPickerFunc func(ctx context.Context, namespace, service string, port int32) (addr string, useTLS bool, err error)

// Options tune the Router. The zero value means every default.
type Options struct {
	// EndpointPicker finds an endpoint picker; default: a Ready pod of the
	// Service at the port's target, over TLS unless the pod's container
	// runs with --secure-serving=false (the endpoint picker's default is
	// TLS).
	EndpointPicker EndpointPickerFunc
	// RejectAlpha2Pools makes v1alpha2 InferencePool backends invalid
	// (InvalidKind), as gateways that serve only v1 pools do. A Gateway's
	// PoolGroupsAnnotation overrides it.
	RejectAlpha2Pools bool
	// Log gets a line per request that fails in the gateway.
	Log io.Writer
	// Authorizer, if set, decides on each request matched to a route
	// before it goes to a backend (AuthPolicies enforces Kuadrant's
	// AuthPolicies); nil lets every request through.
	Authorizer Authorizer
	// RateLimiter, if set, counts each request the Authorizer let through
	// (RateLimitPolicies enforces Kuadrant's RateLimitPolicies); nil: no
	// limits.
	RateLimiter RateLimiter
}

// Router routes the requests a Gateway's listeners take, reading
// Gateways, HTTPRoutes, InferencePools, Services and Pods from a reader
// (a cache in a cluster, a fake client in unit tests).
type Router struct {
	reader client.Reader
	opts   Options
	// backend is the client to model servers: HTTPS without verification,
	// as KServe's gateways reach the workloads.
	backend *http.Client

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn // endpoint pickers, by address and TLS
	logMu sync.Mutex
}

// NewRouter returns a router that reads objects from reader.
func NewRouter(reader client.Reader, opts Options) *Router {
	r := &Router{reader: reader, opts: opts, conns: map[string]*grpc.ClientConn{}}
	if r.opts.Log == nil {
		r.opts.Log = io.Discard
	}
	if r.opts.EndpointPicker == nil {
		r.opts.EndpointPicker = r.defaultEndpointPicker
	}
	r.backend = &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // test tooling: the gateway does not check model servers' certificates, as KServe's DestinationRules do not
		MaxIdleConnsPerHost: 64,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return r
}

// Close closes the connections to endpoint pickers.
func (r *Router) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, c := range r.conns {
		_ = c.Close()
		delete(r.conns, k)
	}
}

func (r *Router) logf(format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.opts.Log, "[test gateway] "+format+"\n", args...)
}

// fail answers a request the gateway cannot route, and logs why.
func (r *Router) fail(w http.ResponseWriter, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.logf("%d: %s", code, msg)
	http.Error(w, msg, code)
}

// Handler serves the requests that one listener of a Gateway takes.
func (r *Router) Handler(gw types.NamespacedName, listener gatewayv1.SectionName) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := req.Context()
		gateway, routes, err := r.attachedRoutes(ctx, gw, listener, req.Host)
		if err != nil {
			r.fail(w, http.StatusInternalServerError, "%v", err)
			return
		}
		m, ok := route(routes, req)
		if !ok {
			r.fail(w, http.StatusNotFound, "no route of Gateway %s listener %s matches %s %s", gw, listener, req.Method, req.URL.Path)
			return
		}
		at := AuthTarget{Gateway: gw, Listener: listener, Route: m.route, Rule: m.rule}
		if !r.authorize(w, req, at) || !r.rateLimit(w, req, at) {
			return
		}
		if t := m.rule.Timeouts; t != nil && t.Request != nil {
			if d, err := time.ParseDuration(string(*t.Request)); err == nil && d > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
		}
		r.serve(ctx, w, req, gateway, m)
	})
}

// attachedRoutes are the HTTPRoutes attached to a listener whose hostnames
// admit the request's host.
func (r *Router) attachedRoutes(ctx context.Context, key types.NamespacedName, listener gatewayv1.SectionName, host string) (*gatewayv1.Gateway, []*gatewayv1.HTTPRoute, error) {
	gw := &gatewayv1.Gateway{}
	if err := r.reader.Get(ctx, key, gw); err != nil {
		return nil, nil, fmt.Errorf("read Gateway %s: %w", key, err)
	}
	i := slices.IndexFunc(gw.Spec.Listeners, func(l gatewayv1.Listener) bool { return l.Name == listener })
	if i < 0 {
		return nil, nil, fmt.Errorf("gateway %s has no listener %s", key, listener)
	}
	l := gw.Spec.Listeners[i]
	// No host (counting the attached routes) skips the hostname checks.
	if host != "" && l.Hostname != nil && !hostMatches([]gatewayv1.Hostname{*l.Hostname}, host) {
		return gw, nil, nil
	}
	list := &gatewayv1.HTTPRouteList{}
	if err := r.reader.List(ctx, list); err != nil {
		return nil, nil, fmt.Errorf("list HTTPRoutes: %w", err)
	}
	var out []*gatewayv1.HTTPRoute
	for i := range list.Items {
		rt := &list.Items[i]
		if host != "" && !hostMatches(rt.Spec.Hostnames, host) {
			continue
		}
		for _, ref := range rt.Spec.ParentRefs {
			ok, err := r.admits(ctx, gw, l, rt, ref)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				out = append(out, rt)
				break
			}
		}
	}
	return gw, out, nil
}

// admits says whether listener l of gw takes route rt through its parent
// reference ref: the reference names gw (and the listener's section and
// port, if it says), the listener serves HTTP and allows HTTPRoutes from
// the route's namespace.
func (r *Router) admits(ctx context.Context, gw *gatewayv1.Gateway, l gatewayv1.Listener, rt *gatewayv1.HTTPRoute, ref gatewayv1.ParentReference) (bool, error) {
	if !refersTo(ref, rt.Namespace, client.ObjectKeyFromObject(gw)) || ref.SectionName != nil && *ref.SectionName != l.Name || ref.Port != nil && *ref.Port != l.Port {
		return false, nil
	}
	if !httpListener(l) || !allowsHTTPRoutes(l.AllowedRoutes) {
		return false, nil
	}
	return r.namespaceAllowed(ctx, l.AllowedRoutes, gw.Namespace, rt.Namespace)
}

func allowsHTTPRoutes(ar *gatewayv1.AllowedRoutes) bool {
	if ar == nil || len(ar.Kinds) == 0 {
		return true
	}
	return slices.ContainsFunc(ar.Kinds, func(k gatewayv1.RouteGroupKind) bool {
		return k.Kind == "HTTPRoute" && (k.Group == nil || *k.Group == gatewayv1.GroupName)
	})
}

// refersTo says whether a route's parent reference names the Gateway key.
func refersTo(ref gatewayv1.ParentReference, routeNamespace string, key types.NamespacedName) bool {
	gw, ok := gatewayOf(ref, routeNamespace)
	return ok && gw == key
}

// namespaceAllowed applies a listener's allowedRoutes.namespaces (default:
// the Gateway's namespace).
func (r *Router) namespaceAllowed(ctx context.Context, ar *gatewayv1.AllowedRoutes, gwNamespace, routeNamespace string) (bool, error) {
	from := gatewayv1.NamespacesFromSame
	var sel *metav1.LabelSelector
	if ar != nil && ar.Namespaces != nil {
		if ar.Namespaces.From != nil {
			from = *ar.Namespaces.From
		}
		sel = ar.Namespaces.Selector
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true, nil
	case gatewayv1.NamespacesFromSame:
		return gwNamespace == routeNamespace, nil
	case gatewayv1.NamespacesFromSelector:
		s, err := metav1.LabelSelectorAsSelector(sel)
		if sel == nil || err != nil {
			return false, nil //nolint:nilerr // an invalid selector admits nothing, as in a real gateway
		}
		ns := &corev1.Namespace{}
		if err := r.reader.Get(ctx, types.NamespacedName{Name: routeNamespace}, ns); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return s.Matches(labels.Set(ns.Labels)), nil
	}
	return false, nil
}

// backend is one backendRef resolved.
type backend struct {
	ref    gatewayv1.HTTPBackendRef
	weight int32
	// reason (a route's ResolvedRefs reason) and message say why the ref
	// cannot be used; the reason is empty when it can.
	reason  gatewayv1.RouteConditionReason
	message string
}

func (b backend) invalid() string {
	if b.reason == "" {
		return ""
	}
	return string(b.reason) + ": " + b.message
}

// PoolGroupsAnnotation on a Gateway lists, comma-separated, the
// InferencePool API groups the test gateway routes to for it; backends of
// another group are invalid (InvalidKind), as for a gateway implementation
// that does not know that API. Without it: both groups, or v1 alone with
// Options.RejectAlpha2Pools. The demo plays a gateway upgraded from
// v1alpha2 to v1 InferencePools by changing it.
const PoolGroupsAnnotation = "test-gateway.odh-serving.opendatahub.io/inferencepool-groups"

// servesPools says whether the test gateway routes gw's requests to
// InferencePools of group.
func (r *Router) servesPools(gw *gatewayv1.Gateway, group string) bool {
	if v, ok := gw.Annotations[PoolGroupsAnnotation]; ok {
		for _, g := range strings.Split(v, ",") {
			if strings.TrimSpace(g) == group {
				return true
			}
		}
		return false
	}
	return group == gieapiv1.GroupVersion.Group || group == gieapixv1alpha2.GroupVersion.Group && !r.opts.RejectAlpha2Pools
}

// resolveBackends resolves a rule's backendRefs, for a route in namespace
// attached to gw.
func (r *Router) resolveBackends(ctx context.Context, gw *gatewayv1.Gateway, namespace string, refs []gatewayv1.HTTPBackendRef) ([]backend, error) {
	var out []backend
	for _, ref := range refs {
		b := backend{ref: ref, weight: 1}
		if ref.Weight != nil {
			b.weight = *ref.Weight
		}
		group, kind := groupKind(ref.BackendObjectReference)
		var obj client.Object
		switch {
		case ref.Namespace != nil && string(*ref.Namespace) != namespace:
			b.reason, b.message = gatewayv1.RouteReasonRefNotPermitted, fmt.Sprintf("backend %s in namespace %s: the test gateway reads no ReferenceGrants", ref.Name, *ref.Namespace)
		case group == "" && kind == "Service":
			obj = &corev1.Service{}
		case group == gieapiv1.GroupVersion.Group && kind == "InferencePool" && r.servesPools(gw, group):
			obj = &gieapiv1.InferencePool{}
		case group == gieapixv1alpha2.GroupVersion.Group && kind == "InferencePool" && r.servesPools(gw, group):
			obj = &gieapixv1alpha2.InferencePool{}
		default:
			b.reason, b.message = gatewayv1.RouteReasonInvalidKind, fmt.Sprintf("backend %s: kind %s in group %q is not supported", ref.Name, kind, group)
		}
		if obj != nil {
			err := r.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: string(ref.Name)}, obj)
			switch {
			case meta.IsNoMatchError(err):
				b.reason, b.message = gatewayv1.RouteReasonInvalidKind, fmt.Sprintf("backend %s: the cluster does not serve kind %s in group %q", ref.Name, kind, group)
			case client.IgnoreNotFound(err) != nil:
				return nil, fmt.Errorf("read backend %s %s/%s: %w", kind, namespace, ref.Name, err)
			case err != nil:
				b.reason, b.message = gatewayv1.RouteReasonBackendNotFound, fmt.Sprintf("backend %s %s.%s not found", kind, ref.Name, group)
			}
		}
		out = append(out, b)
	}
	return out, nil
}

func groupKind(ref gatewayv1.BackendObjectReference) (group, kind string) {
	kind = "Service"
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	return group, kind
}

// chooseBackend picks a backend by weight among the valid ones. Requests
// that would go to an invalid backend by its weight get a 500, as Gateway
// API specifies.
func chooseBackend(bs []backend) (backend, bool) {
	var total int32
	for _, b := range bs {
		total += b.weight
	}
	if total == 0 {
		return backend{}, false
	}
	n := rand.Int32N(total)
	for _, b := range bs {
		if n < b.weight {
			return b, b.reason == ""
		}
		n -= b.weight
	}
	return backend{}, false
}

// serve sends a matched request to one of its rule's backends.
func (r *Router) serve(ctx context.Context, w http.ResponseWriter, req *http.Request, gw *gatewayv1.Gateway, m matched) {
	rt := m.route
	backends, err := r.resolveBackends(ctx, gw, rt.Namespace, m.rule.BackendRefs)
	if err != nil {
		r.fail(w, http.StatusInternalServerError, "HTTPRoute %s/%s: %v", rt.Namespace, rt.Name, err)
		return
	}
	b, ok := chooseBackend(backends)
	if !ok {
		var why []string
		for _, b := range backends {
			if b.reason != "" {
				why = append(why, b.invalid())
			}
		}
		r.fail(w, http.StatusInternalServerError, "HTTPRoute %s/%s: no usable backend (%s)", rt.Namespace, rt.Name, strings.Join(why, "; "))
		return
	}
	// What the route changes (the URLRewrite and RequestHeaderModifier
	// filters) is applied when the request goes upstream, as Envoy's
	// router applies a route's path rewrite and request_headers_to_add/
	// remove (RouteEntry::finalizeRequestHeaders, called from the router
	// filter's decodeHeaders in source/common/router/router.cc): after
	// ext_authz (the Authorizer, before serve) and ext_proc (the endpoint
	// picker), which see the request as the client sent it.
	out := req.Clone(ctx)
	act := routeAction{path: req.URL.Path, host: req.Host}
	var respHeaders *gatewayv1.HTTPHeaderFilter
	for _, f := range append(slices.Clone(m.rule.Filters), b.ref.Filters...) {
		switch f.Type {
		case gatewayv1.HTTPRouteFilterURLRewrite:
			if f.URLRewrite != nil {
				act.path = rewritePath(f.URLRewrite.Path, m.match, act.path)
				if f.URLRewrite.Hostname != nil {
					act.host = string(*f.URLRewrite.Hostname)
				}
			}
		case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
			if f.RequestHeaderModifier != nil {
				act.headers = append(act.headers, f.RequestHeaderModifier)
			}
		case gatewayv1.HTTPRouteFilterResponseHeaderModifier:
			respHeaders = f.ResponseHeaderModifier
		}
	}
	backendTimeout := time.Duration(0)
	if t := m.rule.Timeouts; t != nil && t.BackendRequest != nil {
		backendTimeout, _ = time.ParseDuration(string(*t.BackendRequest))
	}
	if respHeaders != nil {
		w = &headerModifyingWriter{ResponseWriter: w, mod: respHeaders}
	}
	group, kind := groupKind(b.ref.BackendObjectReference)
	w.Header().Set(BackendHeader, fmt.Sprintf("%s %s.%s", kind, b.ref.Name, group))
	if group == "" {
		r.toService(ctx, w, out, act, rt.Namespace, b.ref, backendTimeout)
		return
	}
	r.toPool(ctx, w, out, act, rt.Namespace, group, string(b.ref.Name), backendTimeout)
}

// routeAction is what a route's filters change in a request on its way
// upstream: the path and host (URLRewrite) and the headers
// (RequestHeaderModifier, in the rule's then the backend's order).
type routeAction struct {
	path, host string
	headers    []*gatewayv1.HTTPHeaderFilter
}

// modifyHeaders applies a header filter as Envoy applies a route's
// header changes: the removals first, then set and add
// (HeaderParser::evaluateHeaders in source/common/router/header_parser.cc:
// "remove-before-add"), so a header the filter sets survives its own
// removal list.
func modifyHeaders(h http.Header, f *gatewayv1.HTTPHeaderFilter) {
	if f == nil {
		return
	}
	for _, n := range f.Remove {
		h.Del(n)
	}
	for _, s := range f.Set {
		h.Set(string(s.Name), s.Value)
	}
	for _, a := range f.Add {
		h.Add(string(a.Name), a.Value)
	}
}

type headerModifyingWriter struct {
	http.ResponseWriter
	mod  *gatewayv1.HTTPHeaderFilter
	done bool
}

func (w *headerModifyingWriter) WriteHeader(code int) {
	if !w.done {
		modifyHeaders(w.Header(), w.mod)
		w.done = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *headerModifyingWriter) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *headerModifyingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// endpoint is a pod that can take requests: its address and whether its
// port serves TLS.
type endpoint struct {
	pod    string
	addr   string
	useTLS bool
}

// readyEndpoints lists the Ready pods selected in a namespace with the
// port: a number, or a container port's name.
func (r *Router) readyEndpoints(ctx context.Context, namespace string, selector labels.Selector, port string) ([]endpoint, error) {
	pods := &corev1.PodList{}
	if err := r.reader.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("list pods %q in %s: %w", selector, namespace, err)
	}
	var out []endpoint
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil || !podwatch.Ready(p) {
			continue
		}
		number, useTLS, ok := containerPort(p, port)
		if !ok {
			continue
		}
		out = append(out, endpoint{pod: p.Name, addr: net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(number))), useTLS: useTLS})
	}
	slices.SortFunc(out, func(a, b endpoint) int { return strings.Compare(a.pod, b.pod) })
	return out, nil
}

// containerPort resolves a port (a number or a name) on a pod, and says
// whether the container serves TLS there (the port is named https or its
// probe's scheme is HTTPS).
func containerPort(p *corev1.Pod, port string) (int32, bool, bool) {
	// A port number is 32 bits in the API; a larger one names no port.
	n, numErr := strconv.ParseInt(port, 10, 32)
	all := append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...)
	for _, c := range all {
		for _, cp := range c.Ports {
			if numErr == nil && cp.ContainerPort == int32(n) || numErr != nil && cp.Name == port {
				useTLS := cp.Name == "https"
				for _, pr := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
					if pr != nil && pr.HTTPGet != nil && pr.HTTPGet.Port.IntVal == cp.ContainerPort && pr.HTTPGet.Scheme == corev1.URISchemeHTTPS {
						useTLS = true
					}
				}
				return cp.ContainerPort, useTLS, true
			}
		}
	}
	if numErr == nil {
		// A number no container declares still reaches the pod.
		return int32(n), false, true
	}
	return 0, false, false
}

// serviceEndpoints are the Ready pods behind a Service port.
func (r *Router) serviceEndpoints(ctx context.Context, namespace, name string, port int32) ([]endpoint, error) {
	svc := &corev1.Service{}
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, svc); err != nil {
		return nil, fmt.Errorf("read Service %s/%s: %w", namespace, name, err)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
	if i < 0 {
		return nil, fmt.Errorf("service %s/%s has no port %d", namespace, name, port)
	}
	sp := svc.Spec.Ports[i]
	target := sp.TargetPort.String()
	if sp.TargetPort.IntVal == 0 && sp.TargetPort.StrVal == "" {
		target = strconv.Itoa(int(sp.Port))
	}
	eps, err := r.readyEndpoints(ctx, namespace, labels.SelectorFromSet(svc.Spec.Selector), target)
	if err != nil {
		return nil, err
	}
	if sp.AppProtocol != nil && *sp.AppProtocol == "https" {
		for i := range eps {
			eps[i].useTLS = true
		}
	}
	return eps, nil
}

func (r *Router) toService(ctx context.Context, w http.ResponseWriter, req *http.Request, act routeAction, namespace string, ref gatewayv1.HTTPBackendRef, timeout time.Duration) {
	port := int32(0)
	if ref.Port != nil {
		port = *ref.Port
	}
	eps, err := r.serviceEndpoints(ctx, namespace, string(ref.Name), port)
	if err != nil {
		r.fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if len(eps) == 0 {
		r.fail(w, http.StatusServiceUnavailable, "Service %s/%s: no Ready pod", namespace, ref.Name)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		r.fail(w, http.StatusBadRequest, "read the request body: %v", err)
		return
	}
	r.toAnyOf(ctx, w, req, act, eps, body, timeout)
}

// toAnyOf forwards the request to one of the endpoints at random and
// copies the response back as it comes.
func (r *Router) toAnyOf(ctx context.Context, w http.ResponseWriter, req *http.Request, act routeAction, eps []endpoint, body []byte, timeout time.Duration) {
	resp, err := r.forward(ctx, req, act, eps[rand.IntN(len(eps))], body, nil, nil, timeout)
	if err != nil {
		r.forwardFailed(w, err)
		return
	}
	defer resp.Body.Close()
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	copyFlushing(w, resp.Body)
}

func copyFlushing(w http.ResponseWriter, body io.Reader) {
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *Router) forwardFailed(w http.ResponseWriter, err error) {
	if errors.Is(err, context.DeadlineExceeded) {
		r.fail(w, http.StatusGatewayTimeout, "%v", err)
		return
	}
	r.fail(w, http.StatusServiceUnavailable, "%v", err)
}

// forward sends the request to one endpoint, with the body and the
// endpoint picker's header mutations given, then the route's changes.
func (r *Router) forward(ctx context.Context, req *http.Request, act routeAction, ep endpoint, body []byte, set map[string]string, remove []string, timeout time.Duration) (*http.Response, error) {
	scheme := "http"
	if ep.useTLS {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: ep.addr, Path: act.path, RawQuery: req.URL.RawQuery}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		// The body is read by the caller after forward returns: cancel
		// when it is closed.
		out, err := r.send(ctx, req, act, u, body, set, remove)
		if err != nil {
			cancel()
			return nil, err
		}
		out.Body = &cancelOnClose{ReadCloser: out.Body, cancel: cancel}
		return out, nil
	}
	return r.send(ctx, req, act, u, body, set, remove)
}

func (r *Router) send(ctx context.Context, req *http.Request, act routeAction, u url.URL, body []byte, set map[string]string, remove []string) (*http.Response, error) {
	out, err := http.NewRequestWithContext(ctx, req.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	copyHeader(out.Header, req.Header)
	for _, h := range []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length"} {
		out.Header.Del(h)
	}
	for k, v := range set {
		if !strings.HasPrefix(k, ":") {
			out.Header.Set(k, v)
		}
	}
	for _, k := range remove {
		out.Header.Del(k)
	}
	for _, f := range act.headers {
		modifyHeaders(out.Header, f)
	}
	out.Host = act.host
	out.ContentLength = int64(len(body))
	resp, err := r.backend.Do(out)
	if err != nil {
		return nil, fmt.Errorf("forward to %s: %w", u.Host, err)
	}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// poolSpec is what the gateway needs of an InferencePool of either group.
type poolSpec struct {
	selector    labels.Selector
	targetPort  int32
	epp         string
	eppPort     int32
	failureOpen bool
}

func (r *Router) readPool(ctx context.Context, namespace, group, name string) (poolSpec, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	if group == gieapiv1.GroupVersion.Group {
		p := &gieapiv1.InferencePool{}
		if err := r.reader.Get(ctx, key, p); err != nil {
			return poolSpec{}, fmt.Errorf("read InferencePool %s (%s): %w", key, group, err)
		}
		m := map[string]string{}
		for k, v := range p.Spec.Selector.MatchLabels {
			m[string(k)] = string(v)
		}
		ps := poolSpec{selector: labels.SelectorFromSet(m), epp: string(p.Spec.EndpointPickerRef.Name), eppPort: 9002,
			failureOpen: p.Spec.EndpointPickerRef.FailureMode == gieapiv1.EndpointPickerFailOpen}
		if len(p.Spec.TargetPorts) > 0 {
			ps.targetPort = int32(p.Spec.TargetPorts[0].Number)
		}
		if p.Spec.EndpointPickerRef.Port != nil {
			ps.eppPort = int32(p.Spec.EndpointPickerRef.Port.Number)
		}
		return ps, nil
	}
	p := &gieapixv1alpha2.InferencePool{}
	if err := r.reader.Get(ctx, key, p); err != nil {
		return poolSpec{}, fmt.Errorf("read InferencePool %s (%s): %w", key, group, err)
	}
	m := map[string]string{}
	for k, v := range p.Spec.Selector {
		m[string(k)] = string(v)
	}
	ps := poolSpec{selector: labels.SelectorFromSet(m), targetPort: p.Spec.TargetPortNumber, epp: string(p.Spec.ExtensionRef.Name), eppPort: 9002}
	if p.Spec.ExtensionRef.PortNumber != nil {
		ps.eppPort = int32(*p.Spec.ExtensionRef.PortNumber)
	}
	ps.failureOpen = p.Spec.ExtensionRef.FailureMode != nil && *p.Spec.ExtensionRef.FailureMode == gieapixv1alpha2.FailOpen
	return ps, nil
}

// toPool asks the pool's endpoint picker for an endpoint and forwards the
// request there; when the picker fails, failureMode decides: FailOpen
// forwards to a Ready pod of the pool, FailClose answers 503.
func (r *Router) toPool(ctx context.Context, w http.ResponseWriter, req *http.Request, act routeAction, namespace, group, name string, timeout time.Duration) {
	pool, err := r.readPool(ctx, namespace, group, name)
	if err != nil {
		r.fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		r.fail(w, http.StatusBadRequest, "read the request body: %v", err)
		return
	}
	eps, err := r.readyEndpoints(ctx, namespace, pool.selector, strconv.Itoa(int(pool.targetPort)))
	if err != nil {
		r.fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
	p, pickErr := r.pick(ctx, req, namespace, pool, body)
	if pickErr != nil {
		if !pool.failureOpen {
			r.fail(w, http.StatusServiceUnavailable, "InferencePool %s/%s (%s): failureMode FailClose: %v", namespace, name, group, pickErr)
			return
		}
		if len(eps) == 0 {
			r.fail(w, http.StatusServiceUnavailable, "InferencePool %s/%s (%s): failureMode FailOpen, but no Ready pod: %v", namespace, name, group, pickErr)
			return
		}
		r.logf("InferencePool %s/%s (%s): failureMode FailOpen: %v", namespace, name, group, pickErr)
		w.Header().Set(PickedByHeader, PickedByFailOpen)
		r.toAnyOf(ctx, w, req, act, eps, body, timeout)
		return
	}
	defer p.close()
	if p.Immediate != nil {
		w.WriteHeader(p.Immediate.Status)
		_, _ = w.Write(p.Immediate.Body)
		return
	}
	ep := endpoint{addr: p.Endpoint}
	if i := slices.IndexFunc(eps, func(e endpoint) bool { return e.addr == p.Endpoint }); i >= 0 {
		ep = eps[i]
	}
	w.Header().Set(PickedByHeader, PickedByEndpointPicker)
	resp, err := r.forward(ctx, req, act, ep, p.Body, p.SetHeaders, p.RemoveHeaders, timeout)
	if err != nil {
		r.forwardFailed(w, err)
		return
	}
	defer resp.Body.Close()
	if err := p.respond(w, resp); err != nil {
		r.logf("InferencePool %s/%s (%s): %v", namespace, name, group, err)
	}
}

// pick asks the pool's endpoint picker; an error is the picker's failure.
func (r *Router) pick(ctx context.Context, req *http.Request, namespace string, pool poolSpec, body []byte) (*pick, error) {
	addr, useTLS, err := r.opts.EndpointPicker(ctx, namespace, pool.epp, pool.eppPort)
	if err != nil {
		return nil, errPicker{err}
	}
	conn, err := r.conn(addr, useTLS)
	if err != nil {
		return nil, errPicker{err}
	}
	return startPick(ctx, extprocv3.NewExternalProcessorClient(conn), req, req.URL.Path, body)
}

func (r *Router) conn(addr string, useTLS bool) (*grpc.ClientConn, error) {
	key := fmt.Sprintf("%s tls=%t", addr, useTLS)
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.conns[key]; ok {
		return c, nil
	}
	creds := insecure.NewCredentials()
	if useTLS {
		// As KServe's DestinationRule for the endpoint picker: TLS, the
		// certificate not checked.
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // see above
	}
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	r.conns[key] = c
	return c, nil
}

// defaultEndpointPicker finds a Ready pod of the Service at the port's
// target; TLS unless its container says --secure-serving=false.
func (r *Router) defaultEndpointPicker(ctx context.Context, namespace, service string, port int32) (string, bool, error) {
	eps, err := r.serviceEndpoints(ctx, namespace, service, port)
	if err != nil {
		return "", false, err
	}
	if len(eps) == 0 {
		return "", false, fmt.Errorf("service %s/%s: no Ready pod", namespace, service)
	}
	ep := eps[0]
	pod := &corev1.Pod{}
	useTLS := true
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ep.pod}, pod); err == nil {
		for _, c := range pod.Spec.Containers {
			if slices.Contains(c.Args, "--secure-serving=false") {
				useTLS = false
			}
		}
	}
	return ep.addr, useTLS, nil
}
