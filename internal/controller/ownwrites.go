package controller

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// ownWrites remembers, per service, the resourceVersion the cache must
// show before the controller trusts it for that service again: the one its
// own last write to the service returned.
//
// Why: the controller patches a service's status with an optimistic lock.
// A child's event often reconciles the service again right after, before
// the service's watch has delivered that status write (the update passes
// no predicate, but the cache still has to see it). That reconcile read
// the older service from the cache, and its status patch carried the old
// resourceVersion: a 409 Conflict, and a whole reconcile done again. Under
// load (300 services, 16 clients) that was 44 conflicts. Now, while the
// cache shows another version than the one remembered, the service is read
// from the API server.
//
// Versions are only compared for equality, never ordered: a cache that
// shows the remembered version has seen the write; one that shows another
// may be behind or ahead, and the API server says which. Its answer is
// remembered in turn, so the cache is trusted again once it shows that. An
// entry goes when the cache catches up or the service is gone.
type ownWrites struct {
	mu sync.Mutex
	rv map[types.NamespacedName]string
}

// wrote records the version a write to the service returned.
func (w *ownWrites) wrote(svc *v1alpha2.LLMInferenceService) {
	w.expect(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, svc.ResourceVersion)
}

// expect records the version the cache must show for key; "" is one it
// never shows: the next read goes to the API server.
func (w *ownWrites) expect(key types.NamespacedName, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rv == nil {
		w.rv = map[types.NamespacedName]string{}
	}
	w.rv[key] = rv
}

func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}

// behind reports whether a cached service at version rv may be older than
// the controller's last write to it. A cache that shows the expected
// version has caught up, and the entry goes.
func (w *ownWrites) behind(key types.NamespacedName, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	want, ok := w.rv[key]
	if ok && want == rv {
		delete(w.rv, key)
		return false
	}
	return ok
}

// getService reads the service key: from the cache, or from the API server
// while the cache may not have seen the controller's last write to it
// (ownWrites).
func (r *Reconciler) getService(ctx context.Context, key types.NamespacedName) (*v1alpha2.LLMInferenceService, error) {
	svc := &v1alpha2.LLMInferenceService{}
	if err := r.client.Get(ctx, key, svc); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.forget(key)
		}
		return nil, err
	}
	if !r.writes.behind(key, svc.ResourceVersion) {
		return svc, nil
	}
	fresh := &v1alpha2.LLMInferenceService{}
	if err := r.apiReader.Get(ctx, key, fresh); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.forget(key)
			return nil, err
		}
		return nil, fmt.Errorf("from the API server: %w", err)
	}
	if fresh.ResourceVersion == svc.ResourceVersion {
		r.writes.forget(key)
	} else {
		r.writes.expect(key, fresh.ResourceVersion)
	}
	return fresh, nil
}
