package controller

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// refused is the error a client gets from an API server that is not
// listening.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}

func TestRetryRefusedRetriesUntilTheServerListens(t *testing.T) {
	calls := 0
	got, err := retryRefused(context.Background(), func() (int, error) {
		if calls++; calls < 4 {
			return 0, refused
		}
		return 42, nil
	})
	if err != nil || got != 42 || calls != 4 {
		t.Fatalf("got %d, %v after %d calls; want 42, nil after 4", got, err, calls)
	}
}

func TestRetryRefusedPassesOtherErrors(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old resource version")
	busy := apierrors.NewTooManyRequests("storage is (re)initializing", 1)
	for _, want := range []error{gone, busy, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, "x")} {
		calls := 0
		_, err := retryRefused(context.Background(), func() (int, error) { calls++; return 0, want })
		if !errors.Is(err, want) || calls != 1 {
			t.Errorf("%v: got %v after %d calls; want it back after 1", want, err, calls)
		}
	}
}

func TestRetryRefusedStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := retryRefused(ctx, func() (int, error) { return 0, refused })
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want the refused connection", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("returned %v after the context ended", d)
	}
}

// fakeLW is a list-watch whose watches the test drives.
type fakeLW struct {
	watches chan *watch.FakeWatcher
	listErr error
}

func (f *fakeLW) List(metav1.ListOptions) (runtime.Object, error) {
	return &corev1.ConfigMapList{}, f.listErr
}

func (f *fakeLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFake()
	f.watches <- w
	return w, nil
}

// trackedRedial is a redial whose informer state belongs to a new
// freshness, for ConfigMaps.
func trackedRedial(lw *fakeLW) (redial, *freshness) {
	f := newFreshness(runtime.NewScheme())
	return redial{lw: toolscache.ToListerWatcherWithContext(lw), state: &informerState{f: f, gvk: gvkConfigMap}}, f
}

var gvkConfigMap = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// eventually waits up to a second for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 1s", what)
		}
	}
}

// TestFreshnessAfterAWatchBreak: a watch the server ends early makes the
// kind stale, through the 410 of the next watch, until the informer has
// listed again and watches.
func TestFreshnessAfterAWatchBreak(t *testing.T) {
	lw := &fakeLW{watches: make(chan *watch.FakeWatcher, 4)}
	r, f := trackedRedial(lw)
	ctx := context.Background()
	timeout := int64(300)
	w, err := r.WatchWithContext(ctx, metav1.ListOptions{TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	server := <-lw.watches
	server.Add(&corev1.ConfigMap{})
	<-w.ResultChan()
	if f.Stale(gvkConfigMap) {
		t.Fatal("stale while the watch runs")
	}
	server.Stop() // the API server goes away
	if _, open := <-w.ResultChan(); open {
		t.Fatal("the watch did not end")
	}
	eventually(t, "stale after the watch ended early", func() bool { return f.Stale(gvkConfigMap) })

	w, _ = r.WatchWithContext(ctx, metav1.ListOptions{TimeoutSeconds: &timeout})
	server = <-lw.watches
	server.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired})
	<-w.ResultChan()
	w.Stop()
	if !f.Stale(gvkConfigMap) {
		t.Fatal("fresh after 410 Expired")
	}
	if _, err := r.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if !f.Stale(gvkConfigMap) {
		t.Fatal("fresh before the reflector watches again: its store may not be replaced yet")
	}
	w, _ = r.WatchWithContext(ctx, metav1.ListOptions{TimeoutSeconds: &timeout})
	<-lw.watches
	if f.Stale(gvkConfigMap) {
		t.Fatal("stale after the relist")
	}
	w.Stop() // the reflector's own stop
	if f.Stale(gvkConfigMap) {
		t.Fatal("stale after the reflector stopped its watch")
	}
}

// TestFreshnessResumedWatch: after an early end, a watch that goes on from
// the same resourceVersion makes the kind fresh with its first event; a
// watch that ends at its timeout leaves it fresh; a failed list makes it
// stale.
func TestFreshnessResumedWatch(t *testing.T) {
	lw := &fakeLW{watches: make(chan *watch.FakeWatcher, 4)}
	r, f := trackedRedial(lw)
	ctx := context.Background()
	long, short := int64(300), int64(1)
	w, _ := r.WatchWithContext(ctx, metav1.ListOptions{TimeoutSeconds: &long})
	(<-lw.watches).Stop()
	<-w.ResultChan()
	eventually(t, "stale", func() bool { return f.Stale(gvkConfigMap) })
	w, _ = r.WatchWithContext(ctx, metav1.ListOptions{TimeoutSeconds: &short})
	server := <-lw.watches
	server.Action(watch.Bookmark, &corev1.ConfigMap{})
	<-w.ResultChan()
	if f.Stale(gvkConfigMap) {
		t.Fatal("stale after the resumed watch's first event")
	}
	time.Sleep(time.Second)
	server.Stop() // at its timeout (1 s): an ordinary end
	<-w.ResultChan()
	time.Sleep(20 * time.Millisecond)
	if f.Stale(gvkConfigMap) {
		t.Fatal("stale after a watch ended at its timeout")
	}
	lw.listErr = apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")
	if _, err := r.ListWithContext(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("the list's error was lost")
	}
	if !f.Stale(gvkConfigMap) {
		t.Fatal("fresh after a failed list")
	}
	var none *freshness
	if none.Stale(gvkConfigMap) {
		t.Fatal("a nil freshness says stale")
	}
}

// TestFreshnessOfAStoppedInformer: an informer that failed to list (its
// CRD went) makes its kind stale, and no longer once it is stopped
// (enabler.disable): nothing reads it, and a new informer of the kind, for
// a CRD that came back, must not inherit its staleness.
func TestFreshnessOfAStoppedInformer(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := newFreshness(scheme)
	lw := &fakeLW{watches: make(chan *watch.FakeWatcher, 4), listErr: apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")}
	inf := f.newInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		inf.RunWithContext(ctx)
	}()
	eventually(t, "stale after a failed list", func() bool { return f.Stale(gvkConfigMap) })
	stop()
	<-ran
	if f.Stale(gvkConfigMap) {
		t.Fatal("stale after the informer stopped")
	}
}
