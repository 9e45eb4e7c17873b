package certs_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/opendatahub-io/odh-serving/internal/certs"
)

const systemNS = "opendatahub"

var (
	caKey     = types.NamespacedName{Namespace: systemNS, Name: certs.CASecretName}
	secretKey = types.NamespacedName{Namespace: "team-a", Name: "chat-kserve-self-signed-certs"}
	svcNames  = []string{"chat-kserve-workload-svc.team-a.svc", "chat-kserve-workload-svc.team-a.svc.cluster.local"}
	owner     = &metav1.OwnerReference{
		APIVersion: "serving.kserve.io/v1alpha2", Kind: "LLMInferenceService", Name: "chat", UID: "uid-chat",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
)

// writeCounter wraps a fake client and counts the writes that reach it.
type writeCounter struct {
	client.Client
	writes atomic.Int64
}

func (w *writeCounter) take() int64 { return w.writes.Swap(0) }

func newClient(tb testing.TB, objs ...client.Object) *writeCounter {
	tb.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		tb.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		tb.Fatal(err)
	}
	// APIServices as unstructured, as APIServiceCerts reads them.
	apiServices := schema.GroupVersion{Group: "apiregistration.k8s.io", Version: "v1"}
	scheme.AddKnownTypeWithName(apiServices.WithKind("APIService"), &unstructured.Unstructured{})
	scheme.AddKnownTypeWithName(apiServices.WithKind("APIServiceList"), &unstructured.UnstructuredList{})
	wc := &writeCounter{}
	count := func() { wc.writes.Add(1) }
	wc.Client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	return wc
}

func getSecret(t *testing.T, c client.Client, key types.NamespacedName) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(t.Context(), key, s); err != nil {
		t.Fatalf("get secret %s: %v", key, err)
	}
	return s
}

// leafOf parses the secret's pair and checks that ca.crt verifies it for
// every name at now.
func leafOf(t *testing.T, s *corev1.Secret, names []string, now time.Time) *x509.Certificate {
	t.Helper()
	pair, err := certs.ParsePair(s.Data["tls.crt"], s.Data["tls.key"])
	if err != nil {
		t.Fatalf("secret %s: %v", s.Name, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatalf("secret %s: ca.crt holds no certificate", s.Name)
	}
	for _, n := range names {
		if _, err := pair.Cert.Verify(x509.VerifyOptions{DNSName: n, Roots: roots, CurrentTime: now}); err != nil {
			t.Fatalf("secret %s at %s, name %s: %v", s.Name, now, n, err)
		}
	}
	return pair.Cert
}

func ensure(t *testing.T, a *certs.Authority, c client.Client, names []string, now time.Time) certs.Result {
	t.Helper()
	res, err := a.EnsureServingSecret(t.Context(), c, secretKey, names, owner, now)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestEnsureServingSecretCreatesOnce(t *testing.T) {
	c := newClient(t)
	a := &certs.Authority{Secret: caKey}
	res := ensure(t, a, c, svcNames, t0)
	if !res.Changed || c.take() != 2 {
		t.Fatalf("first call: Changed=%v, want a CA and a serving secret created", res.Changed)
	}
	s := getSecret(t, c, secretKey)
	if s.Type != corev1.SecretTypeTLS || s.Labels["app.kubernetes.io/managed-by"] != "odh-serving" {
		t.Errorf("type %s, labels %v; want kubernetes.io/tls managed by odh-serving", s.Type, s.Labels)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != owner.UID {
		t.Errorf("owner references %v, want the service", s.OwnerReferences)
	}
	leaf := leafOf(t, s, svcNames, t0)
	if want := certs.RenewAt(leaf, certs.DefaultRenewWindow); !res.RenewAt.Equal(want) {
		t.Errorf("RenewAt = %s, want the leaf's %s", res.RenewAt, want)
	}
	if got := res.RequeueAfter(t0); got < 59*24*time.Hour {
		t.Errorf("RequeueAfter = %s, want about 60 days", got)
	}
	ca := getSecret(t, c, caKey)
	if ca.Type != corev1.SecretTypeTLS || !bytes.Equal(ca.Data["ca.crt"], s.Data["ca.crt"]) {
		t.Errorf("CA secret type %s; its bundle and the service's differ", ca.Type)
	}

	// Steady state: an hour later, and through a new Authority (a restart
	// or another replica), nothing is written.
	for i, a := range []*certs.Authority{a, {Secret: caKey}} {
		if res := ensure(t, a, c, svcNames, t0.Add(time.Hour)); res.Changed {
			t.Errorf("authority %d: Changed on a valid secret", i)
		}
		if n := c.take(); n != 0 {
			t.Errorf("authority %d: %d writes on a valid secret, want 0", i, n)
		}
	}
	if again := getSecret(t, c, secretKey); !bytes.Equal(again.Data["tls.key"], s.Data["tls.key"]) {
		t.Error("the key changed without a write")
	}
}

// TestRotationBeforeExpiry runs a two-minute leaf for half an hour the way
// the controller does, waking at RequeueAfter: every wake-up rotates, and
// the certificate in the secret is valid at every moment.
func TestRotationBeforeExpiry(t *testing.T) {
	c := newClient(t)
	a := &certs.Authority{Secret: caKey, Lifetimes: certs.Lifetimes{Leaf: 2 * time.Minute}}
	now := t0
	res := ensure(t, a, c, svcNames, now)
	prev := leafOf(t, getSecret(t, c, secretKey), svcNames, now)
	rotations := 0
	for now.Before(t0.Add(30 * time.Minute)) {
		// Calls between wake-ups write nothing.
		for _, d := range []time.Duration{time.Second, res.RequeueAfter(now) / 2, res.RequeueAfter(now) - time.Second} {
			c.take()
			if r := ensure(t, a, c, svcNames, now.Add(d)); r.Changed || c.take() != 0 {
				t.Fatalf("at %s (+%s): wrote before the renewal time %s", now, d, res.RenewAt)
			}
		}
		now = now.Add(res.RequeueAfter(now))
		if !now.Before(prev.NotAfter) {
			t.Fatalf("wake-up at %s is not before expiry %s", now, prev.NotAfter)
		}
		res = ensure(t, a, c, svcNames, now)
		if !res.Changed {
			t.Fatalf("at %s, the renewal time: nothing rotated", now)
		}
		cur := leafOf(t, getSecret(t, c, secretKey), svcNames, now)
		if cur.SerialNumber.Cmp(prev.SerialNumber) == 0 {
			t.Fatalf("at %s: same serial after rotation", now)
		}
		prev = cur
		rotations++
	}
	// 30 min / 78 s between rotations.
	if rotations < 20 {
		t.Errorf("%d rotations in 30 minutes, want at least 20", rotations)
	}
}

func TestReissue(t *testing.T) {
	other := newCA(t, t0, time.Hour)
	foreign := issue(t, other, svcNames, t0, time.Hour)
	tests := map[string]struct {
		data  map[string][]byte
		names []string
	}{
		"names changed": {names: append([]string{"chat-epp-service.team-a.svc"}, svcNames...)},
		"signed by another CA": {data: map[string][]byte{
			"tls.crt": foreign.CertPEM, "tls.key": foreign.KeyPEM, "ca.crt": other.CertPEM,
		}},
		"key does not match":  {data: map[string][]byte{"tls.crt": foreign.CertPEM, "tls.key": other.KeyPEM}},
		"unparsable":          {data: map[string][]byte{"tls.crt": []byte("junk"), "tls.key": []byte("junk")}},
		"empty (KServe-made)": {data: map[string][]byte{}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := newClient(t)
			a := &certs.Authority{Secret: caKey}
			ensure(t, a, c, svcNames, t0)
			before := getSecret(t, c, secretKey)
			if tt.data != nil {
				before.Data = tt.data
				before.Labels = nil
				if err := c.Update(t.Context(), before); err != nil {
					t.Fatal(err)
				}
			}
			names := svcNames
			if tt.names != nil {
				names = tt.names
			}
			c.take()
			if res := ensure(t, a, c, names, t0.Add(time.Minute)); !res.Changed || c.take() != 1 {
				t.Fatalf("Changed=%v, want one write", res.Changed)
			}
			after := getSecret(t, c, secretKey)
			leaf := leafOf(t, after, names, t0.Add(time.Minute))
			if bytes.Equal(after.Data["tls.key"], before.Data["tls.key"]) {
				t.Error("key not replaced")
			}
			if after.Labels["app.kubernetes.io/managed-by"] != "odh-serving" {
				t.Errorf("labels %v after take-over", after.Labels)
			}
			if rotate, why := certs.NeedsRotation(leaf, names, t0.Add(time.Minute), certs.DefaultRenewWindow); rotate {
				t.Errorf("new certificate needs rotation: %s", why)
			}
		})
	}
}

// TestCARotation: when the CA rotates, a valid leaf keeps its key and only
// gets the new bundle (old and new CA); the next leaf comes from the new CA.
func TestCARotation(t *testing.T) {
	c := newClient(t)
	life := certs.Lifetimes{CA: 30 * time.Minute, Leaf: 2 * time.Minute}
	a := &certs.Authority{Secret: caKey, Lifetimes: life}
	ensure(t, a, c, svcNames, t0)
	oldCA := getSecret(t, c, caKey)
	oldCert, err := certs.ParseCertificates(oldCA.Data["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	caRenew := certs.RenewAt(oldCert[0], certs.DefaultRenewWindow)

	// A fresh leaf a minute before the CA's renewal time.
	ensure(t, a, c, svcNames, caRenew.Add(-time.Minute))
	before := getSecret(t, c, secretKey)
	c.take()
	res := ensure(t, a, c, svcNames, caRenew)
	if !res.Changed || c.take() != 2 {
		t.Fatal("at the CA's renewal time: want the CA rotated and the bundle updated (2 writes)")
	}
	after := getSecret(t, c, secretKey)
	if !bytes.Equal(after.Data["tls.key"], before.Data["tls.key"]) || !bytes.Equal(after.Data["tls.crt"], before.Data["tls.crt"]) {
		t.Error("the valid leaf was reissued; only ca.crt should change")
	}
	bundle, err := certs.ParseCertificates(after.Data["ca.crt"])
	if err != nil || len(bundle) != 2 || !bundle[1].Equal(oldCert[0]) {
		t.Fatalf("bundle after CA rotation: %d certificates (%v), want the new and the old CA", len(bundle), err)
	}
	leafOf(t, after, svcNames, caRenew)

	// The next leaf is signed by the new CA.
	ensure(t, a, c, svcNames, res.RenewAt)
	leaf := leafOf(t, getSecret(t, c, secretKey), svcNames, res.RenewAt)
	if !certs.SignedBy(leaf, bundle[:1]) {
		t.Error("the leaf after the CA rotation is not signed by the new CA")
	}
}

// TestCAFromTheSecret: a restarted controller, another replica and an
// administrator's own CA are all read from the secret, and a deleted CA
// secret is made again at the next refresh.
func TestCAFromTheSecret(t *testing.T) {
	own := newCA(t, t0, 24*time.Hour)
	c := newClient(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: caKey.Name, Namespace: caKey.Namespace},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": own.CertPEM, "tls.key": own.KeyPEM},
	})
	a := &certs.Authority{Secret: caKey}
	if res := ensure(t, a, c, svcNames, t0); !res.Changed || c.take() != 1 {
		t.Fatal("want only the serving secret written")
	}
	s := getSecret(t, c, secretKey)
	if !bytes.Equal(s.Data["ca.crt"], own.CertPEM) || !certs.SignedBy(leafOf(t, s, svcNames, t0), []*x509.Certificate{own.Cert}) {
		t.Error("the leaf is not signed by the administrator's CA")
	}
	bundle, err := (&certs.Authority{Secret: caKey}).Bundle(t.Context(), c, t0)
	if err != nil || !bytes.Equal(bundle, own.CertPEM) {
		t.Errorf("another replica's bundle differs (%v)", err)
	}

	if err := c.Delete(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: caKey.Name, Namespace: caKey.Namespace}}); err != nil {
		t.Fatal(err)
	}
	c.take()
	if res := ensure(t, a, c, svcNames, t0.Add(time.Minute)); res.Changed {
		t.Error("wrote before the CA was read again")
	}
	if res := ensure(t, a, c, svcNames, t0.Add(6*time.Minute)); !res.Changed || c.take() != 2 {
		t.Fatal("after the refresh: want a new CA and the leaf reissued from it")
	}
	leafOf(t, getSecret(t, c, secretKey), svcNames, t0.Add(6*time.Minute))
}

func TestEnsureServingSecretRefuses(t *testing.T) {
	foreignOwner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "uid-x", Controller: ptr.To(true)}
	c := newClient(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretKey.Name, Namespace: secretKey.Namespace, OwnerReferences: []metav1.OwnerReference{foreignOwner}},
		Type:       corev1.SecretTypeTLS,
	})
	a := &certs.Authority{Secret: caKey}
	_, err := a.EnsureServingSecret(t.Context(), c, secretKey, svcNames, owner, t0)
	if err == nil || !strings.Contains(err.Error(), "owned by Deployment x") {
		t.Errorf("secret owned by another controller: err = %v", err)
	}
	for name, call := range map[string]func() error{
		"no names": func() error {
			_, err := a.EnsureServingSecret(t.Context(), c, secretKey, nil, owner, t0)
			return err
		},
		"no namespace": func() error {
			_, err := a.EnsureServingSecret(t.Context(), c, types.NamespacedName{Name: "x"}, svcNames, owner, t0)
			return err
		},
		"no CA secret name": func() error {
			_, err := (&certs.Authority{}).EnsureServingSecret(t.Context(), c, secretKey, svcNames, owner, t0)
			return err
		},
	} {
		if err := call(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// labelledOnly is a cache that holds only secrets labelled managed-by
// odh-serving, as a controller may configure to save memory.
type labelledOnly struct{ client.Client }

func (l labelledOnly) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := l.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if obj.GetLabels()["app.kubernetes.io/managed-by"] != "odh-serving" {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	return nil
}

// TestTakeOverUnseenSecret: a KServe-era secret the cache does not show is
// found through Reader after the create fails, and taken over.
func TestTakeOverUnseenSecret(t *testing.T) {
	c := newClient(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretKey.Name, Namespace: secretKey.Namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"tls.crt": []byte("rsa"), "tls.key": []byte("rsa")},
	})
	cached := labelledOnly{c}
	if _, err := (&certs.Authority{Secret: caKey}).EnsureServingSecret(t.Context(), cached, secretKey, svcNames, owner, t0); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("without Reader: err = %v, want AlreadyExists", err)
	}
	a := &certs.Authority{Secret: caKey, Reader: c}
	res, err := a.EnsureServingSecret(t.Context(), cached, secretKey, svcNames, owner, t0)
	if err != nil || !res.Changed {
		t.Fatalf("with Reader: Changed=%v err=%v", res.Changed, err)
	}
	s := getSecret(t, c, secretKey)
	leafOf(t, s, svcNames, t0)
	if s.Type != corev1.SecretTypeOpaque || s.Labels["app.kubernetes.io/managed-by"] != "odh-serving" {
		t.Errorf("after take-over: type %s, labels %v", s.Type, s.Labels)
	}
	c.take()
	if res, err := a.EnsureServingSecret(t.Context(), cached, secretKey, svcNames, owner, t0.Add(time.Minute)); err != nil || res.Changed || c.take() != 0 {
		t.Errorf("now labelled and in the cache: Changed=%v err=%v, want no write", res.Changed, err)
	}
}
