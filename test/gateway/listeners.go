package gateway

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
)

// FieldManager owns the statuses the test gateway writes.
const FieldManager = "odh-serving-test-gateway"

// DefaultFirstAddress is where Listeners start handing out loopback
// addresses, one per Gateway.
const DefaultFirstAddress = "127.0.100.1"

// Listeners serves every Gateway of a cluster: each gets a loopback address
// of its own, listens there on each HTTP and HTTPS listener's port (HTTPS
// with the listener's certificate Secret), and has that address, Accepted
// and Programmed written to its status, with each listener's attached
// routes. A listener port below 1024 needs the right to bind it (root, or
// CAP_NET_BIND_SERVICE).
type Listeners struct {
	router *Router
	c      client.Client
	// first is the first address handed out.
	first net.IP

	mu    sync.Mutex
	byGW  map[types.NamespacedName]*gatewayServers
	inUse map[string]bool
}

type gatewayServers struct {
	addr    string
	servers map[string]*http.Server // by listener name
	// listeners are the servers' sockets: closed with them, also before
	// Serve has taken them.
	listeners []net.Listener
	// version tells a changed spec of listeners from the one served.
	version string
	// lock claims addr among the processes of this machine while the
	// Gateway is served there, also while its listeners are served anew.
	lock *hostlock.Lock
}

// NewListeners sets up, on the manager, the controller that serves every
// Gateway through router (whose reader should be the manager's cache).
func NewListeners(mgr manager.Manager, router *Router, firstAddress string) (*Listeners, error) {
	if firstAddress == "" {
		firstAddress = DefaultFirstAddress
	}
	ip := net.ParseIP(firstAddress).To4()
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("test gateway: first address %q is not an IPv4 loopback address", firstAddress)
	}
	l := &Listeners{router: router, c: mgr.GetClient(), first: ip, byGW: map[types.NamespacedName]*gatewayServers{}, inUse: map[string]bool{}}
	err := builder.ControllerManagedBy(mgr).Named("test-gateway-listeners").
		// Tests start several gateways in one process.
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		For(&gatewayv1.Gateway{}).
		Watches(&gatewayv1.HTTPRoute{}, handler.EnqueueRequestsFromMapFunc(routeParents)).
		Complete(reconcile.Func(l.reconcile))
	if err != nil {
		return nil, fmt.Errorf("test gateway: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		l.Close()
		return nil
	})); err != nil {
		return nil, fmt.Errorf("test gateway: %w", err)
	}
	return l, nil
}

func routeParents(_ context.Context, obj client.Object) []reconcile.Request {
	rt, ok := obj.(*gatewayv1.HTTPRoute)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, ref := range rt.Spec.ParentRefs {
		if key, ok := gatewayOf(ref, rt.Namespace); ok {
			out = append(out, reconcile.Request{NamespacedName: key})
		}
	}
	return out
}

// Address is where a Gateway is served; false when it is not.
func (l *Listeners) Address(gw types.NamespacedName) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.byGW[gw]
	if !ok {
		return "", false
	}
	return s.addr, true
}

// Close stops serving every Gateway.
func (l *Listeners) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for key, s := range l.byGW {
		s.end()
		delete(l.inUse, s.addr)
		delete(l.byGW, key)
	}
}

// end stops the servers and gives the address up.
func (s *gatewayServers) end() {
	s.stop()
	_ = s.lock.Release()
}

func (s *gatewayServers) stop() {
	for name, srv := range s.servers {
		_ = srv.Close()
		delete(s.servers, name)
	}
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
	s.listeners = nil
}

func (l *Listeners) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	gw := &gatewayv1.Gateway{}
	if err := l.c.Get(ctx, req.NamespacedName, gw); err != nil {
		if client.IgnoreNotFound(err) == nil {
			l.mu.Lock()
			if s, ok := l.byGW[req.NamespacedName]; ok {
				s.end()
				delete(l.inUse, s.addr)
				delete(l.byGW, req.NamespacedName)
			}
			l.mu.Unlock()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	listenErrs, err := l.serve(ctx, gw)
	if err != nil {
		return reconcile.Result{}, err
	}
	addr, _ := l.Address(req.NamespacedName)
	status := gw.Status.DeepCopy()
	status.Addresses = []gatewayv1.GatewayStatusAddress{{Type: ptr.To(gatewayv1.IPAddressType), Value: addr}}
	setCondition(&status.Conditions, string(gatewayv1.GatewayConditionAccepted), true, string(gatewayv1.GatewayReasonAccepted), "accepted by the test gateway", gw.Generation)
	programmed := len(listenErrs) == 0
	msg := "the test gateway listens at " + addr
	if !programmed {
		var errs []error
		for _, e := range listenErrs {
			errs = append(errs, e)
		}
		msg = fmt.Sprintf("the test gateway cannot listen at %s: %v", addr, errors.Join(errs...))
	}
	setCondition(&status.Conditions, string(gatewayv1.GatewayConditionProgrammed), programmed, string(gatewayv1.GatewayReasonProgrammed), msg, gw.Generation)
	var listeners []gatewayv1.ListenerStatus
	for _, ls := range gw.Spec.Listeners {
		var prev []metav1.Condition
		if i := slices.IndexFunc(gw.Status.Listeners, func(s gatewayv1.ListenerStatus) bool { return s.Name == ls.Name }); i >= 0 {
			prev = slices.Clone(gw.Status.Listeners[i].Conditions)
		}
		st := gatewayv1.ListenerStatus{Name: ls.Name, SupportedKinds: []gatewayv1.RouteGroupKind{}, Conditions: prev}
		if !httpListener(ls) {
			setCondition(&st.Conditions, string(gatewayv1.ListenerConditionAccepted), false, string(gatewayv1.ListenerReasonUnsupportedProtocol),
				fmt.Sprintf("the test gateway serves HTTPRoutes only, not protocol %s", ls.Protocol), gw.Generation)
		} else {
			st.SupportedKinds = []gatewayv1.RouteGroupKind{{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: "HTTPRoute"}}
			_, routes, err := l.router.attachedRoutes(ctx, req.NamespacedName, ls.Name, "")
			if err != nil {
				return reconcile.Result{}, err
			}
			st.AttachedRoutes = int32(len(routes))
			lerr := listenErrs[string(ls.Name)]
			setCondition(&st.Conditions, string(gatewayv1.ListenerConditionAccepted), true, string(gatewayv1.ListenerReasonAccepted), "accepted", gw.Generation)
			setCondition(&st.Conditions, string(gatewayv1.ListenerConditionResolvedRefs), lerr == nil, string(gatewayv1.ListenerReasonResolvedRefs), errText(lerr, "resolved"), gw.Generation)
			setCondition(&st.Conditions, string(gatewayv1.ListenerConditionProgrammed), lerr == nil, string(gatewayv1.ListenerReasonProgrammed), errText(lerr, "listening"), gw.Generation)
		}
		listeners = append(listeners, st)
	}
	status.Listeners = listeners
	if equality.Semantic.DeepEqual(*status, gw.Status) {
		return reconcile.Result{}, nil
	}
	gw.Status = *status
	if err := l.c.Status().Update(ctx, gw, client.FieldOwner(FieldManager)); err != nil {
		return reconcile.Result{}, fmt.Errorf("write the status of Gateway %s: %w", req.NamespacedName, err)
	}
	if !programmed {
		// A port in use may be freed; a Secret may appear.
		return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
	}
	return reconcile.Result{}, nil
}

func errText(err error, ok string) string {
	if err != nil {
		return err.Error()
	}
	return ok
}

func httpListener(l gatewayv1.Listener) bool {
	return l.Protocol == gatewayv1.HTTPProtocolType || l.Protocol == gatewayv1.HTTPSProtocolType
}

func setCondition(conds *[]metav1.Condition, typ string, ok bool, reason, msg string, generation int64) {
	status := metav1.ConditionTrue
	if !ok {
		status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: generation})
}

// serve makes the Gateway's servers match its listeners; the errors are
// the listeners that could not be served, by name.
func (l *Listeners) serve(ctx context.Context, gw *gatewayv1.Gateway) (map[string]error, error) {
	key := client.ObjectKeyFromObject(gw)
	// The listeners' value: fmt.Sprint would print their pointer fields'
	// addresses, which differ on every object read.
	spec, err := json.Marshal(gw.Spec.Listeners)
	if err != nil {
		return nil, fmt.Errorf("gateway %s: %w", key, err)
	}
	version := string(spec)
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.byGW[key]
	if s != nil && s.version == version && len(s.servers) == countHTTP(gw) {
		return nil, nil
	}
	var claimed map[gatewayv1.SectionName]net.Listener
	if s == nil {
		var addr string
		var lock *hostlock.Lock
		addr, claimed, lock = l.claimAddress(gw)
		s = &gatewayServers{addr: addr, servers: map[string]*http.Server{}, lock: lock}
		l.inUse[s.addr] = true
		l.byGW[key] = s
	}
	s.stop()
	s.version = version
	errs := map[string]error{}
	for _, ls := range gw.Spec.Listeners {
		if !httpListener(ls) {
			continue
		}
		addr := net.JoinHostPort(s.addr, strconv.Itoa(int(ls.Port)))
		ln, err := claimed[ls.Name], error(nil)
		if ln == nil {
			ln, err = net.Listen("tcp", addr)
		}
		if err != nil {
			errs[string(ls.Name)] = fmt.Errorf("listener %s: %w", ls.Name, err)
			continue
		}
		if ls.Protocol == gatewayv1.HTTPSProtocolType {
			cert, err := l.listenerCertificate(ctx, gw, ls)
			if err != nil {
				_ = ln.Close()
				errs[string(ls.Name)] = fmt.Errorf("listener %s: %w", ls.Name, err)
				continue
			}
			ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12})
		}
		srv := &http.Server{Handler: l.router.Handler(key, ls.Name), ReadHeaderTimeout: 10 * time.Second}
		s.servers[string(ls.Name)] = srv
		s.listeners = append(s.listeners, ln)
		go func() { _ = srv.Serve(ln) }()
		l.router.logf("Gateway %s listener %s: %s://%s", key, ls.Name, map[bool]string{true: "https", false: "http"}[ls.Protocol == gatewayv1.HTTPSProtocolType], addr)
	}
	if len(errs) > 0 {
		// Serve again on the next reconcile.
		s.version = ""
	}
	return errs, nil
}

func countHTTP(gw *gatewayv1.Gateway) int {
	n := 0
	for _, ls := range gw.Spec.Listeners {
		if httpListener(ls) {
			n++
		}
	}
	return n
}

// claimAddress finds the first address from l.first that no other process
// (another test gateway on this machine) has claimed (test/hostlock) and
// where every HTTP listener of gw can listen, and returns it with the
// listeners open and the claim. When none of the first 64 will do, it
// returns the first one, with nothing open or claimed: serve then reports
// why.
func (l *Listeners) claimAddress(gw *gatewayv1.Gateway) (string, map[gatewayv1.SectionName]net.Listener, *hostlock.Lock) {
	first := ""
	for range 64 {
		addr := l.nextAddress()
		if first == "" {
			first = addr
		}
		lock, err := hostlock.Try(hostlock.Dir(), "gateway-"+addr)
		if err != nil {
			// Claimed by another process, or not to be claimed here.
			l.inUse[addr] = true
			continue
		}
		lns := map[gatewayv1.SectionName]net.Listener{}
		taken := false
		for _, ls := range gw.Spec.Listeners {
			if !httpListener(ls) {
				continue
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(int(ls.Port))))
			if errors.Is(err, syscall.EADDRINUSE) {
				taken = true
				break
			}
			if err == nil {
				lns[ls.Name] = ln
			}
		}
		if !taken {
			return addr, lns, lock
		}
		for _, ln := range lns {
			_ = ln.Close()
		}
		_ = lock.Release()
		// Held by another process: never hand it out here.
		l.inUse[addr] = true
	}
	return first, nil, nil
}

// nextAddress is the first loopback address from l.first not in use.
func (l *Listeners) nextAddress() string {
	ip := slices.Clone(l.first)
	for {
		a := ip.String()
		if !l.inUse[a] {
			return a
		}
		for i := 3; i >= 1; i-- {
			ip[i]++
			if ip[i] != 0 {
				break
			}
		}
	}
}

// listenerCertificate reads the first certificate Secret of an HTTPS
// listener.
func (l *Listeners) listenerCertificate(ctx context.Context, gw *gatewayv1.Gateway, ls gatewayv1.Listener) (*tls.Certificate, error) {
	if ls.TLS == nil || len(ls.TLS.CertificateRefs) == 0 {
		return nil, errors.New("no certificateRefs")
	}
	ref := ls.TLS.CertificateRefs[0]
	ns := gw.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	secret := &corev1.Secret{}
	if err := l.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: string(ref.Name)}, secret); err != nil {
		return nil, fmt.Errorf("read certificate Secret %s/%s: %w", ns, ref.Name, err)
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("certificate Secret %s/%s: %w", ns, ref.Name, err)
	}
	return &cert, nil
}
