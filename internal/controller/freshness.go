package controller

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// freshness tracks, by kind, the informers whose cache may be behind the
// API server: from the moment their watch breaks until they have listed
// again, or their new watch delivers an event. While a kind is stale, the
// reconciler reads it from the API server (freshReader), so it does
// not send again the writes the cache has not seen yet.
//
// Why: when the API server restarts, every watch ends. The new server's
// watch caches start at a newer resourceVersion, so each informer's watch
// is answered 410 Expired, and the reflector relists only after its
// back-off (0.8 s doubling, up to 30 s, shared with the 429s it got).
// For a CRD's resource the new server first answers watches 429 (storage
// initializing) for seconds, while it fills its watch cache. The informers
// catch up one by one, seconds apart: until the InferencePools' did, the
// controller saw none of the pools it had created since the restart and
// applied them again on every reconcile, long after the services had
// converged (TestFaultAPIServerRestart). The back-off is client-go's and
// not configurable per informer; what the controller can do is not
// trust a cache it knows is behind.
//
// A watch that ends before its timeout (the server closed it or went away)
// or fails, and a list that fails, make the kind stale; a relist followed by
// a new watch, or any event but an error on a watch, make it fresh. A
// watch that ends at its timeout is picked up again from the same
// resourceVersion, and the kind stays fresh.
type freshness struct {
	scheme *runtime.Scheme
	mu     sync.Mutex
	stale  map[schema.GroupVersionKind]int // informers of the kind that are stale
}

func newFreshness(scheme *runtime.Scheme) *freshness {
	return &freshness{scheme: scheme, stale: map[schema.GroupVersionKind]int{}}
}

// Stale reports whether an informer of gvk may hold an older state than
// the API server. A nil freshness knows nothing: never stale.
func (f *freshness) Stale(gvk schema.GroupVersionKind) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stale[gvk] > 0
}

// anyStale reports whether an informer of any kind is stale.
func (f *freshness) anyStale() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.stale {
		if n > 0 {
			return true
		}
	}
	return false
}

// newInformer is newInformer with the informer's freshness tracked.
func (f *freshness) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if f == nil {
		return newInformer(lw, obj, resync, indexers)
	}
	gvk, err := apiutil.GVKForObject(obj, f.scheme)
	if err != nil {
		// Nothing asks about a kind the scheme does not know.
		return newInformer(lw, obj, resync, indexers)
	}
	state := &informerState{f: f, gvk: gvk}
	inf := toolscache.NewSharedIndexInformer(redial{lw: toolscache.ToListerWatcherWithContext(lw), state: state}, obj, resync, indexers)
	return stoppingInformer{SharedIndexInformer: inf, state: state}
}

// stoppingInformer is an informer whose freshness no longer counts once
// it stopped: the cache removed it (enabler.disable, when its CRD went)
// and nothing reads it. A stale one would otherwise send every read of
// its kind to the API server for good, even through a new informer.
type stoppingInformer struct {
	toolscache.SharedIndexInformer
	state *informerState
}

func (i stoppingInformer) Run(stop <-chan struct{}) {
	defer i.state.set(false)
	i.SharedIndexInformer.Run(stop)
}

func (i stoppingInformer) RunWithContext(ctx context.Context) {
	defer i.state.set(false)
	i.SharedIndexInformer.RunWithContext(ctx)
}

func (f *freshness) add(gvk schema.GroupVersionKind, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stale[gvk] += n
}

// informerState is one informer's freshness. Its methods are no-ops on a
// nil state.
type informerState struct {
	f   *freshness
	gvk schema.GroupVersionKind

	mu    sync.Mutex
	stale bool
	// relisted is set by a successful list and taken by the next watch:
	// the reflector has replaced its store by then.
	relisted bool
}

func (s *informerState) set(stale bool) {
	s.mu.Lock()
	changed := s.stale != stale
	s.stale = stale
	s.mu.Unlock()
	if changed {
		if stale {
			s.f.add(s.gvk, 1)
		} else {
			s.f.add(s.gvk, -1)
		}
	}
}

// broken: a list or watch call failed.
func (s *informerState) broken() {
	if s != nil {
		s.set(true)
	}
}

// listed: a list succeeded.
func (s *informerState) listed() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.relisted = true
	s.mu.Unlock()
}

// watching wraps a watch that just started: after a relist the store is
// fresh; otherwise the watch's events and its end tell.
func (s *informerState) watching(w watch.Interface, opts metav1.ListOptions) watch.Interface {
	s.mu.Lock()
	relisted := s.relisted
	s.relisted = false
	s.mu.Unlock()
	if relisted {
		s.set(false)
	}
	t := &trackedWatch{in: w, out: make(chan watch.Event), stopped: make(chan struct{}), state: s, start: time.Now()}
	if opts.TimeoutSeconds != nil {
		t.timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	go t.run()
	return t
}

// trackedWatch passes a watch's events on and tells its informer's state
// what they say.
type trackedWatch struct {
	in       watch.Interface
	out      chan watch.Event
	stopped  chan struct{}
	stopOnce sync.Once
	state    *informerState
	start    time.Time
	timeout  time.Duration
}

func (t *trackedWatch) ResultChan() <-chan watch.Event { return t.out }

// Stop is the reflector's: it ends a watch on purpose.
func (t *trackedWatch) Stop() {
	t.stopOnce.Do(func() { close(t.stopped) })
	t.in.Stop()
}

func (t *trackedWatch) run() {
	defer close(t.out)
	for ev := range t.in.ResultChan() {
		// An error (410 Expired, above all) makes the reflector relist;
		// any other event means the server serves the watch from the
		// reflector's resourceVersion on.
		t.state.set(ev.Type == watch.Error)
		select {
		case t.out <- ev:
		case <-t.stopped:
			return
		}
	}
	select {
	case <-t.stopped:
	default:
		if t.timeout == 0 || time.Since(t.start) < t.timeout {
			t.state.set(true) // the server ended the watch early
		}
	}
}
