package controller

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// countingReader counts the reads that reach it.
type countingReader struct {
	client.Reader
	reads atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.reads.Add(1)
	return c.Reader.List(ctx, list, opts...)
}

// TestStaleReadsGoToTheAPIServerWithinTheLimit: while a kind's cache is
// behind, the reads that used to skip the check (scalersOf through its
// field index, shadowService) reach the API server, the index's selector
// applied here; the API server reads stop at the limit's burst when the
// bucket does not refill; once the kind is fresh, reads are the cache's.
func TestStaleReadsGoToTheAPIServerWithinTheLimit(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	shadow := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-pool-ip-1",
		Labels: map[string]string{convention.LabelIstioInferencePool: "llm-inference-pool"}}}
	// The cache is behind: it has none of the API server's objects.
	cacheBuilder := fake.NewClientBuilder().WithScheme(scheme)
	indexes := &indexFuncs{}
	if err := indexScalers(ctx, recordingIndexer{indexer: builderIndexer{cacheBuilder}, scheme: scheme, into: indexes}, &autoscalingv2.HorizontalPodAutoscaler{}); err != nil {
		t.Fatal(err)
	}
	cache := cacheBuilder.Build()
	api := &countingReader{Reader: fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(hpaFor("h", "apps/v1", "Deployment", "llm-kserve"), shadow).Build()}
	fresh := newFreshness(scheme)
	fresh.add(gvkHPA, 1)
	fresh.add(gvkService, 1)
	// A burst of 3 and no refill to speak of: the fourth read would wait
	// beyond ctx's deadline, so it fails at once.
	limited := limitedReader{reader: api, limiter: flowcontrol.NewTokenBucketRateLimiter(0.001, 3)}
	read := &freshReader{cache: cache, api: limited, fresh: fresh, scheme: scheme, indexes: indexes}
	r := &Reconciler{kinds: newAvailability(), scheme: scheme, apiReader: limited, client: freshClient{Client: cache, read: read}, shadows: read}

	found, err := r.scalersOf(ctx, "ns", gvkDeployment, "llm-kserve")
	if err != nil || len(found) != 1 {
		t.Fatalf("scalersOf a stale kind = %d autoscalers, %v; want the API server's one", len(found), err)
	}
	if found, err := r.scalersOf(ctx, "ns", gvkDeployment, "web"); err != nil || len(found) != 0 {
		t.Errorf("scalersOf another workload = %d autoscalers, %v; want none: the index's selector is applied to the API server's list", len(found), err)
	}
	p := &pass{svc: svcWith("ns", "llm", v1alpha2.LLMInferenceServiceSpec{}), plan: &engine.Plan{}}
	p.plan.Names.Pool = "llm-inference-pool"
	if name, err := r.shadowService(ctx, p); err != nil || name != shadow.Name {
		t.Errorf("shadowService of a stale kind = %q, %v; want %s from the API server", name, err, shadow.Name)
	}
	if got := api.reads.Load(); got != 3 {
		t.Errorf("%d reads reached the API server, want 3", got)
	}
	if _, err := r.scalersOf(ctx, "ns", gvkDeployment, "llm-kserve"); err == nil || !strings.Contains(err.Error(), "read limit") {
		t.Errorf("a read past the limit's burst returned %v; want the limit's error", err)
	}
	if got := api.reads.Load(); got != 3 {
		t.Errorf("%d reads reached the API server past the limit, want 3", got)
	}

	fresh.add(gvkHPA, -1)
	if found, err := r.scalersOf(ctx, "ns", gvkDeployment, "llm-kserve"); err != nil || len(found) != 0 {
		t.Errorf("scalersOf a fresh kind = %d autoscalers, %v; want the cache's none", len(found), err)
	}
	if got := api.reads.Load(); got != 3 {
		t.Errorf("a fresh kind's read reached the API server (%d reads)", got)
	}
}
