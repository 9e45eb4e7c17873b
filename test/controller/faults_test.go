package controllertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/presets"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// childGVKs are every kind the engine renders, listed by its labels.
var childGVKs = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "Secret"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
	{Group: "inference.networking.k8s.io", Version: "v1", Kind: "InferencePool"},
	{Group: "inference.networking.x-k8s.io", Version: "v1alpha2", Kind: "InferencePool"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
}

// liveChild is a child found by the engine's labels.
type liveChild struct {
	key string // Kind/name
	// owner is the UID of its controller owner reference, or of the
	// owner-uid annotation for cluster-scoped children.
	owner types.UID
}

// liveChildren lists the objects labelled as children of the service
// called name in the env's namespace (cluster-wide for bindings), sorted.
func (e *env) liveChildren(name string) []liveChild {
	e.t.Helper()
	return e.children(client.MatchingLabels{convention.LabelName: name})[name]
}

// children lists the objects labelled as children of services in the env's
// namespace (cluster-wide for bindings), by service, each sorted; labels
// narrows the selection.
func (e *env) children(labels client.MatchingLabels) map[string][]liveChild {
	e.t.Helper()
	selector := client.MatchingLabels{convention.LabelPartOf: convention.PartOf}
	maps.Copy(selector, labels)
	out := map[string][]liveChild{}
	for _, gvk := range childGVKs {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{selector}
		if gvk.Kind != "ClusterRoleBinding" {
			opts = append(opts, client.InNamespace(e.ns))
		}
		e.must(e.c.List(context.Background(), list, opts...))
		for _, item := range list.Items {
			name := item.Labels[convention.LabelName]
			if gvk.Kind == "ClusterRoleBinding" && item.Annotations[controller.AnnotationOwner] != e.ns+"/"+name {
				continue // another namespace's
			}
			c := liveChild{key: gvk.Kind + "/" + item.Name, owner: types.UID(item.Annotations[controller.AnnotationOwnerUID])}
			if ref := metav1.GetControllerOf(&item); ref != nil {
				c.owner = ref.UID
			}
			out[name] = append(out[name], c)
		}
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b liveChild) int { return strings.Compare(a.key, b.key) })
	}
	return out
}

// renderedChildren renders the live service as the controller does (its
// migration phase from its status) and returns Kind/name of each child,
// sorted.
func (e *env) renderedChildren(svc *v1alpha2.LLMInferenceService) ([]string, error) {
	if err := e.loadPresets(); err != nil {
		return nil, err
	}
	opts := engine.Options{SystemNamespace: e.sys, Images: e.images}
	if p := svc.Status.InferencePool; p != nil && p.MigrationPhase != "" {
		opts.Phase = convention.Phase(p.MigrationPhase)
	}
	res, err := engine.Render(context.Background(), svc, e.catalog, opts)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", svc.Name, err)
	}
	names := make([]string, 0, len(res.Objects))
	for _, o := range res.Objects {
		names = append(names, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
	}
	slices.Sort(names)
	return names, nil
}

// loadPresets fills e.catalog and e.images, once.
func (e *env) loadPresets() error {
	if e.catalog != nil {
		return nil
	}
	var err error
	if e.catalog, err = presets.Catalog(e.sys, "kserve-", nil); err != nil {
		return err
	}
	e.images, err = presets.Images()
	return err
}

// childrenMatch checks that the service has exactly the children the
// engine renders for it, each controlled by it.
func (e *env) childrenMatch(name string) error {
	return e.childrenAre(e.service(name), e.liveChildren(name))
}

// childrenAre checks that live are exactly the children the engine renders
// for svc, each controlled by it.
func (e *env) childrenAre(svc *v1alpha2.LLMInferenceService, live []liveChild) error {
	want, err := e.renderedChildren(svc)
	if err != nil {
		return err
	}
	got := make([]string, 0, len(live))
	for _, c := range live {
		if c.owner != svc.UID {
			return fmt.Errorf("%s is owned by %q, not service %s (%s)", c.key, c.owner, svc.Name, svc.UID)
		}
		got = append(got, c.key)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("children of %s:\n got  %v\n want %v", svc.Name, got, want)
	}
	return nil
}

// TestFaultAPIServerRestart: the API server goes away while the
// controller is reconciling new services and comes back on the same etcd;
// right after, one service is deleted and another loses its router.
// Everything converges: each remaining service has exactly the children
// the engine renders, the deleted one leaves nothing the garbage collector
// would not take (envtest runs none: its cluster-scoped binding is gone and
// every namespaced child is controlled by its UID), and from convergence
// on, steady state sends no writes.
//
// After a restart the informers catch up one by one: a CRD's watch is
// answered 429 while the new server fills its watch cache, then 410
// Expired, and the reflector relists after its back-off. The test makes
// the InferencePools' informer the last, always: their watches are
// answered 429 for watchLagFor after the restart, well past convergence.
// Without freshness.go the controller re-sent the pools' applies on every
// reconcile until that informer relisted (1 run in 3 before, when the lag
// came by chance). The test has a control plane of its own, since it stops
// the API server.
func TestFaultAPIServerRestart(t *testing.T) {
	began := time.Now()
	plane := testenv.StartControlPlane(t, controlplane.Options{Restartable: true})
	testenv.StartCluster(t, plane)
	ctx := context.Background()
	e := &env{t: t, c: plane.Client, rec: &testenv.Recorder{}, cfg: plane.Config, ns: "faults", sys: "faults-system"}
	for _, ns := range []string{e.ns, e.sys} {
		testenv.EnsureNamespace(t, e.c, ns)
	}
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	e.opts = controller.Options{
		Options: engine.Options{SystemNamespace: e.sys}, WatchNamespaces: []string{e.ns}, DisableWebhooks: true,
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", MigrationGracePeriod: time.Hour,
		SyncPeriod: time.Second,
	}
	lag := newWatchLag("/apis/inference.networking.k8s.io/v1/namespaces/" + e.ns + "/inferencepools")
	// failed counts the controller's requests that got no answer: while
	// the API server is down, every one.
	var failed atomic.Int64
	e.wrap = func(next http.RoundTripper) http.RoundTripper {
		next = lag.wrap(next)
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err != nil {
				failed.Add(1)
			}
			return resp, err
		})
	}
	e.run()
	t.Logf("the control plane, the cluster and the controller started in %v", time.Since(began).Round(time.Millisecond))

	var names []string
	for i := range 3 {
		pd := e.decode(prefillDecode)
		pd.Name = fmt.Sprintf("pd-%d", i)
		e.must(e.c.Create(ctx, pd))
		sim := e.decode(simService(fmt.Sprintf("sim-%d", i), managedRouter))
		e.must(e.c.Create(ctx, sim))
		names = append(names, pd.Name, sim.Name)
	}
	// Stop as soon as the controller has started writing children, so
	// reconciles are in flight.
	testenv.Eventually(t, "the controller writes", func() error {
		if e.rec.Count() < 3 {
			return fmt.Errorf("%d writes", e.rec.Count())
		}
		return nil
	})
	stopping := time.Now()
	if err := plane.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped, writesWhenStopped, failedWhenStopped := time.Now(), e.rec.Count(), failed.Load()
	// Down until the controller has found it gone: its watches, broken by
	// the stop, are retried and fail.
	testenv.Eventually(t, "the controller's requests fail", func() error {
		if n := failed.Load() - failedWhenStopped; n < 3 {
			return fmt.Errorf("%d requests failed", n)
		}
		return nil
	})
	lag.arm(watchLagFor)
	if err := plane.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	t.Logf("the API server took %v to stop, was down %v; the controller tried %d writes meanwhile, %d requests failed",
		stopped.Sub(stopping).Round(time.Millisecond), restarted.Sub(stopped).Round(time.Millisecond), e.rec.Count()-writesWhenStopped, failed.Load()-failedWhenStopped)

	// Right after: delete one, take the router from another. Healthy is
	// not yet serving every resource: retry until the delete goes through.
	var deleted *v1alpha2.LLMInferenceService
	testenv.Eventually(t, "delete service pd-1", func() error {
		deleted = &v1alpha2.LLMInferenceService{}
		if err := e.c.Get(ctx, clientKey(e.ns, "pd-1"), deleted); err != nil {
			return err
		}
		return e.c.Delete(ctx, deleted)
	})
	e.update("sim-1", func(s *v1alpha2.LLMInferenceService) { s.Spec.Router = nil })
	names = slices.DeleteFunc(names, func(n string) bool { return n == "pd-1" })

	testenv.Eventually(t, "the deleted service is gone", func() error {
		err := e.c.Get(ctx, clientKey(e.ns, "pd-1"), &v1alpha2.LLMInferenceService{})
		if err == nil {
			return fmt.Errorf("still there")
		}
		return client.IgnoreNotFound(err)
	})
	// Services carry no finalizer: the controller deletes a deleted
	// service's ClusterRoleBindings after the service is gone, and the
	// garbage collector the rest, by their owner.
	testenv.Eventually(t, "the deleted service's ClusterRoleBindings are gone", func() error {
		for _, c := range e.liveChildren("pd-1") {
			if strings.HasPrefix(c.key, "ClusterRoleBinding/") {
				return fmt.Errorf("%s is still there", c.key)
			}
		}
		return nil
	})
	for _, c := range e.liveChildren("pd-1") {
		if c.owner != deleted.UID {
			t.Errorf("orphan of the deleted service: %s (owner %q)", c.key, c.owner)
		}
	}
	for _, name := range names {
		// Settled, not only Ready: a service is Ready on its v1alpha2 pool
		// before its move to v1 is written, and that move is no steady-state
		// write.
		e.waitSettled(name)
		testenv.Eventually(t, "children of "+name, func() error { return e.childrenMatch(name) })
	}
	if got := e.liveChildren("sim-1"); slices.ContainsFunc(got, func(c liveChild) bool { return strings.HasPrefix(c.key, "HTTPRoute/") }) {
		t.Errorf("sim-1 kept its route after losing its router: %v", got)
	}

	converged := time.Now()
	// The InferencePools' watch is still answered 429 and their cache
	// still lacks the pools created since the restart: the controller must
	// read them from the API server (freshness.go) rather than apply them
	// again. Steady state starts at convergence.
	if lag.count() == 0 {
		t.Error("no InferencePool watch was answered 429; the test did not make the cache lag")
	}
	t.Logf("converged and Ready %v after the restart; %d InferencePool watches answered 429",
		converged.Sub(restarted).Round(time.Millisecond), lag.count())
	e.assertSteadyState()
}

// watchLagFor is how long after the restart the API server answers the
// controller's watches of the test namespace's InferencePools with 429s.
const watchLagFor = 12 * time.Second

// watchLag answers the watch requests of one collection with 429 Too Many
// Requests and Retry-After: 1, until a deadline: what kube-apiserver answers
// while its watch cache of a resource is initializing, which for a CRD's
// resource takes seconds after a restart. Lists go through.
type watchLag struct {
	*apiFault
	until time.Time // under apiFault.mu
}

func newWatchLag(path string) *watchLag {
	l := &watchLag{}
	l.apiFault = &apiFault{
		code: http.StatusTooManyRequests, reason: metav1.StatusReasonTooManyRequests, message: "storage is (re)initializing",
		header: http.Header{"Retry-After": []string{"1"}},
		pick: func(req *http.Request) bool {
			return req.URL.Path == path && req.URL.Query().Get("watch") == "true" && time.Now().Before(l.until)
		},
	}
	return l
}

// arm starts answering 429 for d from now.
func (l *watchLag) arm(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.until = time.Now().Add(d)
}

// apiFault stands in for the API server on the GET requests that pick
// chooses: it answers them with a Status error of code, reason and
// message, and counts them.
type apiFault struct {
	mu sync.Mutex
	// pick runs under mu.
	pick     func(*http.Request) bool
	code     int
	reason   metav1.StatusReason
	message  string
	header   http.Header // besides Content-Type
	answered int
}

// count is how many requests were answered with the error.
func (f *apiFault) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answered
}

func (f *apiFault) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		f.mu.Lock()
		fail := req.Method == http.MethodGet && f.pick(req)
		if fail {
			f.answered++
		}
		f.mu.Unlock()
		if !fail {
			return next.RoundTrip(req)
		}
		body, err := json.Marshal(metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Message: f.message, Reason: f.reason, Code: int32(f.code),
		})
		if err != nil {
			return nil, err
		}
		header := http.Header{"Content-Type": []string{"application/json"}}
		maps.Copy(header, f.header)
		return &http.Response{
			StatusCode: f.code, Status: fmt.Sprintf("%d %s", f.code, http.StatusText(f.code)), Request: req, Header: header,
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		}, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// decode reads a YAML service into the env's namespace without creating it.
func (e *env) decode(doc string) *v1alpha2.LLMInferenceService {
	e.t.Helper()
	svc := &v1alpha2.LLMInferenceService{}
	if err := yaml.UnmarshalStrict([]byte(doc), svc); err != nil {
		e.t.Fatalf("decode service: %v", err)
	}
	svc.APIVersion, svc.Kind = v1alpha2.GroupVersion.String(), "LLMInferenceService"
	svc.Namespace = e.ns
	return svc
}

// assertSteadyState checks that, from convergence on, the reconciles of
// the env's services send no write. The env's SyncPeriod (1 s) has the
// cache deliver every object again each period, which reconciles every
// service, so this waits on reconciles rather than for a fixed while.
// Writes that were in flight at convergence (an event of the test's last
// status write) land first: it waits until every service has a reconcile
// that began after the last write and ended without error. From there
// every service must have steadyReconciles more reconciles, each begun
// after that and ended without error, over at least one SyncPeriod (so
// that every kind's informer has delivered its objects again), and no
// write may be sent meanwhile. Each reconcile renders the service and
// compares every child and the status with the cache: any difference
// would be a write.
func (e *env) assertSteadyState() {
	e.t.Helper()
	period := e.opts.SyncPeriod
	if period <= 0 {
		e.t.Fatal("assertSteadyState needs the env's SyncPeriod, which reconciles every service again")
	}
	names := e.serviceNames()
	if len(names) == 0 {
		e.t.Fatal("no service to check the steady state of")
	}
	began, settleFrom := time.Now(), e.rec.Count()
	writes, mark := e.rec.Count(), reconciled.mark()
	testenv.Eventually(e.t, fmt.Sprintf("services %v are reconciled with no write", names), func() error {
		if n := e.rec.Count(); n != writes {
			// Each write starts the wait again.
			writes, mark = n, reconciled.mark()
			return fmt.Errorf("the controller wrote: %v", e.rec.Since(settleFrom))
		}
		return reconciled.atLeast(1, mark, e.ns, names)
	})
	settled, before, mark := time.Now(), e.rec.Count(), reconciled.mark()
	e.waitReconcilesOf(names, mark, settled, func() bool { return e.rec.Count() != before })
	if writes := e.rec.Writes(before); len(writes) > 0 {
		e.t.Errorf("steady state wrote %d times, want 0:", len(writes))
		for _, w := range writes {
			e.t.Errorf("%s (answered %d) %s", w, w.Code, w.Body)
		}
		return
	}
	least := -1
	for _, name := range names {
		if n := reconciled.since(mark, e.ns, name); least < 0 || n < least {
			least = n
		}
	}
	e.t.Logf("settled in %v (%d writes meanwhile); then at least %d reconciles of each of %d services in %v, 0 writes",
		settled.Sub(began).Round(time.Millisecond), before-settleFrom, least, len(names), time.Since(settled).Round(time.Millisecond))
}

// waitReconciles waits until every service in the env's namespace has
// steadyReconciles reconciles begun after mark and ended without error,
// over at least the env's SyncPeriod from now.
func (e *env) waitReconciles(mark uint64) {
	e.t.Helper()
	if e.opts.SyncPeriod <= 0 {
		e.t.Fatal("waitReconciles needs the env's SyncPeriod, which reconciles every service again")
	}
	e.waitReconcilesOf(e.serviceNames(), mark, time.Now(), func() bool { return false })
}

// waitReconcilesOf waits until the named services each have
// steadyReconciles reconciles begun after mark and ended without error,
// and the env's SyncPeriod has passed since from; or until stop says
// there is no point waiting.
func (e *env) waitReconcilesOf(names []string, mark uint64, from time.Time, stop func() bool) {
	e.t.Helper()
	period := e.opts.SyncPeriod
	testenv.Eventually(e.t, fmt.Sprintf("services %v are reconciled %d times over %v", names, steadyReconciles, period), func() error {
		if stop() {
			return nil
		}
		if d := time.Since(from); d < period {
			return fmt.Errorf("%v of %v", d.Round(time.Millisecond), period)
		}
		return reconciled.atLeast(steadyReconciles, mark, e.ns, names)
	})
}

// steadyReconciles is how many reconciles of each service assertSteadyState
// sees write nothing (at least; a SyncPeriod brings several, one for each
// kind's informer). The original fixed window of 5 s asked for 6
// reconciles in all, whichever services they were of.
const steadyReconciles = 2

// serviceNames lists the services in the env's namespace.
func (e *env) serviceNames() []string {
	e.t.Helper()
	list := &v1alpha2.LLMInferenceServiceList{}
	e.must(e.c.List(context.Background(), list, client.InNamespace(e.ns)))
	names := make([]string, 0, len(list.Items))
	for _, svc := range list.Items {
		names = append(names, svc.Name)
	}
	return names
}
