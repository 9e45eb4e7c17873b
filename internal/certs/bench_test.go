package certs_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/internal/certs"
)

// cacheReader reads secrets the way controller-runtime's cache does: a deep
// copy of an object in memory. It cannot write.
type cacheReader struct {
	client.Client // nil: a write panics
	secrets       map[types.NamespacedName]*corev1.Secret
}

func (r cacheReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s, ok := r.secrets[key]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	s.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

// BenchmarkEnsureServingSecret is a steady-state reconcile: the secret is
// valid, so the call reads it, checks names and time, and writes nothing.
// "cache" reads as the controller's cached client does (a deep copy);
// "fake-client" through controller-runtime's fake client, which copies
// through JSON and dominates the time.
func BenchmarkEnsureServingSecret(b *testing.B) {
	c := newClient(b)
	a := &certs.Authority{Secret: caKey}
	ctx := b.Context()
	if _, err := a.EnsureServingSecret(ctx, c, secretKey, svcNames, owner, t0); err != nil {
		b.Fatal(err)
	}
	now := t0.Add(time.Hour)
	// Load the CA at now, so the loop stays within its five-minute refresh.
	if _, err := a.Bundle(ctx, c, now); err != nil {
		b.Fatal(err)
	}
	c.take()
	cache := cacheReader{secrets: map[types.NamespacedName]*corev1.Secret{}}
	for _, key := range []types.NamespacedName{secretKey, caKey} {
		s := &corev1.Secret{}
		if err := c.Get(ctx, key, s); err != nil {
			b.Fatal(err)
		}
		cache.secrets[key] = s
	}
	for name, r := range map[string]client.Client{"cache": cache, "fake-client": c} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := a.EnsureServingSecret(ctx, r, secretKey, svcNames, owner, now)
				if err != nil || res.Changed {
					b.Fatalf("steady state: Changed=%v err=%v", res.Changed, err)
				}
			}
		})
	}
	if n := c.take(); n != 0 {
		b.Fatalf("%d writes in the steady state", n)
	}
}

// BenchmarkEnsureServingSecretUncached is the first steady-state call for
// a secret (after a restart, or once a CA refresh): the pair is parsed and
// its signature verified.
func BenchmarkEnsureServingSecretUncached(b *testing.B) {
	c := newClient(b)
	ctx := b.Context()
	if _, err := (&certs.Authority{Secret: caKey}).EnsureServingSecret(ctx, c, secretKey, svcNames, owner, t0); err != nil {
		b.Fatal(err)
	}
	live, ca := &corev1.Secret{}, &corev1.Secret{}
	if err := c.Get(ctx, secretKey, live); err != nil {
		b.Fatal(err)
	}
	if err := c.Get(ctx, caKey, ca); err != nil {
		b.Fatal(err)
	}
	r := cacheReader{secrets: map[types.NamespacedName]*corev1.Secret{secretKey: live, caKey: ca}}
	// Each call sees the secret at a new resourceVersion, so nothing is remembered.
	a := &certs.Authority{Secret: caKey}
	if _, err := a.Bundle(ctx, c, t0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	rv := 0
	for b.Loop() {
		rv++
		live.ResourceVersion = strconv.Itoa(rv)
		res, err := a.EnsureServingSecret(ctx, r, secretKey, svcNames, owner, t0)
		if err != nil || res.Changed {
			b.Fatalf("Changed=%v err=%v", res.Changed, err)
		}
	}
}

// BenchmarkIssue is what a rotation costs: a P-256 key and a signature.
func BenchmarkIssue(b *testing.B) {
	ca, err := certs.NewCA("bench", t0, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := certs.Issue(ca, svcNames, t0, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewCA is the once-a-year cost of a CA.
func BenchmarkNewCA(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := certs.NewCA("bench", t0, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRSA4096Key is the key KServe generated twice per service on
// every reconcile, for comparison (run with -benchtime=5x).
func BenchmarkRSA4096Key(b *testing.B) {
	for b.Loop() {
		if _, err := rsa.GenerateKey(rand.Reader, 4096); err != nil {
			b.Fatal(err)
		}
	}
}
