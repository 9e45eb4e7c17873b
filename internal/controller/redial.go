package controller

import (
	"context"
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// redial wraps an informer's list-watch so that its cache catches up within
// seconds after the API server restarts, not up to a minute later.
//
// A client-go reflector backs off exponentially (0.8s doubling to 30s, up
// to twice that with jitter) each time its watch is refused, and its
// relist waits for the same back-off. When the API server is back, its
// watch cache starts at a newer resourceVersion, so every informer's watch
// ends with 410 Expired and must relist, after the back-off it built up
// while the server was gone. Until then the cache is frozen where it was
// before the restart: the controller does not see the children it created
// or deleted since, and sends those writes again on every reconcile
// (TestFaultAPIServerRestart: DELETEs of a ClusterRoleBinding already gone;
// a deleted service not finalized for more than 30 seconds when the server
// was down 20).
//
// redial retries a refused connection itself, every redialMax at most, so
// a refused API server does not grow the reflector's back-off, and the
// relist after the restart comes after the reflector's first, short one.
// Other errors go to the reflector as before (429s included: the server
// says when to come back).
//
// redial also tells its informer's freshness (freshness.go) what the
// list-watch went through: a watch that ended early or failed, a relist.
type redial struct {
	lw toolscache.ListerWatcherWithContext
	// state is the informer's freshness; nil when nobody asks.
	state *informerState
}

// redialMin and redialMax bound the wait between two attempts while the
// API server refuses connections. Refused connections cost the server
// nothing.
const (
	redialMin = 100 * time.Millisecond
	redialMax = time.Second
)

// newInformer is the caches' informer constructor: client-go's, with
// redial around the list-watch. The manager's cache uses
// freshness.newInformer, which also tracks the informers' freshness.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(redial{lw: toolscache.ToListerWatcherWithContext(lw)}, obj, resync, indexers)
}

func (r redial) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	out, err := redialed(ctx, r, r.lw.ListWithContext, opts)
	if err == nil {
		r.state.listed()
	}
	return out, err
}

func (r redial) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := redialed(ctx, r, r.lw.WatchWithContext, opts)
	if err != nil || r.state == nil {
		return w, err
	}
	return r.state.watching(w, opts), nil
}

// redialed calls the list-watch's list or watch through retryRefused;
// every attempt that fails marks the informer's state broken.
func redialed[T any](ctx context.Context, r redial, call func(context.Context, metav1.ListOptions) (T, error), opts metav1.ListOptions) (T, error) {
	return retryRefused(ctx, func() (T, error) {
		out, err := call(ctx, opts)
		if err != nil {
			r.state.broken()
		}
		return out, err
	})
}

// List and Watch make redial a toolscache.ListerWatcher; the reflector
// calls the context forms.
func (r redial) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

func (r redial) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

// retryRefused calls do until it returns anything but a refused
// connection, or ctx is done (then it returns the last error).
func retryRefused[T any](ctx context.Context, do func() (T, error)) (T, error) {
	wait := redialMin
	for {
		out, err := do()
		if err == nil || !utilnet.IsConnectionRefused(err) {
			return out, err
		}
		t := time.NewTimer(wait/2 + rand.N(wait/2+1)) //nolint:gosec // jitter between redials: spreads replicas, guards nothing
		select {
		case <-ctx.Done():
			t.Stop()
			return out, err
		case <-t.C:
		}
		wait = min(2*wait, redialMax)
	}
}
