package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// The API server read limit: every read the reconciler sends to the API
// server rather than the cache (while a kind is stale, and the reads that
// are uncached on purpose) waits for a token of one bucket. A stale window
// comes right after an API server restart, while the server refills its
// watch caches; without a limit, every worker's reads of every child would
// go to it at once. Writes are not limited: the API server's priority and
// fairness does that.
const (
	apiReadQPS   = 100
	apiReadBurst = 200
)

// limitedReader reads from the API server within its rate limiter.
type limitedReader struct {
	reader  client.Reader
	limiter flowcontrol.RateLimiter
}

func newLimitedReader(reader client.Reader) limitedReader {
	return limitedReader{reader: reader, limiter: flowcontrol.NewTokenBucketRateLimiter(apiReadQPS, apiReadBurst)}
}

func (l limitedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := l.limiter.Wait(ctx); err != nil {
		return fmt.Errorf("wait for the API server read limit to get %T %s: %w", obj, key, err)
	}
	return l.reader.Get(ctx, key, obj, opts...)
}

func (l limitedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.limiter.Wait(ctx); err != nil {
		return fmt.Errorf("wait for the API server read limit to list %T: %w", list, err)
	}
	return l.reader.List(ctx, list, opts...)
}

// freshReader is the reader every read of the reconciler goes through: the
// cache, or the API server (through the limited reader) while the kind's
// cache may be behind it (freshness.go). A list by one of the cache's
// field indexes is sent to the API server without that selector, which it
// does not know, and filtered here by the index's function.
type freshReader struct {
	cache   client.Reader
	api     client.Reader
	fresh   *freshness
	scheme  *runtime.Scheme
	indexes *indexFuncs
}

func (f *freshReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if f.stale(obj, false) {
		return f.api.Get(ctx, key, obj, opts...)
	}
	return f.cache.Get(ctx, key, obj, opts...)
}

func (f *freshReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if !f.stale(list, true) {
		return f.cache.List(ctx, list, opts...)
	}
	gvk, _ := f.gvk(list, true)
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	var indexed []fields.Requirement
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		var rest []fields.Selector
		for _, req := range lo.FieldSelector.Requirements() {
			if f.indexes.get(gvk, req.Field) != nil && (req.Operator == selection.Equals || req.Operator == selection.DoubleEquals) {
				indexed = append(indexed, req)
				continue
			}
			if req.Operator == selection.NotEquals {
				rest = append(rest, fields.OneTermNotEqualSelector(req.Field, req.Value))
			} else {
				rest = append(rest, fields.OneTermEqualSelector(req.Field, req.Value))
			}
		}
		lo.FieldSelector = nil
		if len(rest) > 0 {
			lo.FieldSelector = fields.AndSelectors(rest...)
		}
	}
	if err := f.api.List(ctx, list, lo); err != nil {
		return err
	}
	if len(indexed) == 0 {
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("filter %s by index: %w", gvk.Kind, err)
	}
	kept := items[:0]
	for _, item := range items {
		obj, ok := item.(client.Object)
		if ok && f.indexes.match(gvk, obj, indexed) {
			kept = append(kept, item)
		}
	}
	return meta.SetList(list, kept)
}

// stale reports whether obj's kind (a list's items' kind) is stale.
func (f *freshReader) stale(obj runtime.Object, isList bool) bool {
	if !f.fresh.anyStale() {
		return false
	}
	gvk, ok := f.gvk(obj, isList)
	return ok && f.fresh.Stale(gvk)
}

func (f *freshReader) gvk(obj runtime.Object, isList bool) (schema.GroupVersionKind, bool) {
	gvk, err := apiutil.GVKForObject(obj, f.scheme)
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	if isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	return gvk, true
}

// freshClient is the manager's client with its reads through a freshReader.
type freshClient struct {
	client.Client
	read *freshReader
}

func (c freshClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.read.Get(ctx, key, obj, opts...)
}

func (c freshClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.read.List(ctx, list, opts...)
}

// indexFuncs are the functions of the cache's field indexes, by kind and
// field, so that a list the API server answers can be filtered the same.
type indexFuncs struct {
	mu    sync.RWMutex
	funcs map[schema.GroupVersionKind]map[string]client.IndexerFunc
}

func (x *indexFuncs) get(gvk schema.GroupVersionKind, field string) client.IndexerFunc {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.funcs[gvk][field]
}

// match reports whether obj's index values hold every requirement.
func (x *indexFuncs) match(gvk schema.GroupVersionKind, obj client.Object, reqs []fields.Requirement) bool {
	for _, req := range reqs {
		fn := x.get(gvk, req.Field)
		if fn == nil {
			return false
		}
		found := false
		for _, v := range fn(obj) {
			if v == req.Value {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// recordingIndexer adds indexes to the cache and remembers their functions.
type recordingIndexer struct {
	indexer client.FieldIndexer
	scheme  *runtime.Scheme
	into    *indexFuncs
}

func (i recordingIndexer) IndexField(ctx context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	if err := i.indexer.IndexField(ctx, obj, field, fn); err != nil {
		return err
	}
	gvk, err := apiutil.GVKForObject(obj, i.scheme)
	if err != nil {
		return fmt.Errorf("index %T by %s: %w", obj, field, err)
	}
	i.into.mu.Lock()
	defer i.into.mu.Unlock()
	if i.into.funcs == nil {
		i.into.funcs = map[schema.GroupVersionKind]map[string]client.IndexerFunc{}
	}
	if i.into.funcs[gvk] == nil {
		i.into.funcs[gvk] = map[string]client.IndexerFunc{}
	}
	i.into.funcs[gvk][field] = fn
	return nil
}
