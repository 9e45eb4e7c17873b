package certs_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func secretPair(t *testing.T, c client.Client, key types.NamespacedName) (*corev1.Secret, *certs.KeyPair) {
	t.Helper()
	s := &corev1.Secret{}
	must(t, c.Get(t.Context(), key, s), "get secret %s", key)
	pair, err := certs.ParsePair(s.Data["tls.crt"], s.Data["tls.key"])
	must(t, err, "secret %s", key)
	return s, pair
}

// TestIntegrationServingSecret: the per-service secret is created once,
// never written in the steady state, rotated at its renewal time and when
// its names change, and a same-named Opaque secret is taken over in place.
func TestIntegrationServingSecret(t *testing.T) {
	c, writes := testenv.RecordingClient(t, cp.Config, cp.Scheme)
	ns, sys := testenv.NewNamespace(t, cp.Client, "certs"), testenv.NewNamespace(t, cp.Client, "certs-sys")
	svc := &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: ns}}
	must(t, cp.Client.Create(t.Context(), svc), "create service")
	owner := metav1.NewControllerRef(svc, v1alpha2.GroupVersion.WithKind("LLMInferenceService"))
	a := &certs.Authority{Secret: types.NamespacedName{Namespace: sys, Name: certs.CASecretName}, Lifetimes: certs.Lifetimes{Leaf: 2 * time.Minute}}
	key := types.NamespacedName{Namespace: ns, Name: "chat-kserve-self-signed-certs"}
	names := []string{"chat-kserve-workload-svc." + ns + ".svc", "chat-kserve-workload-svc." + ns + ".svc.cluster.local"}

	now := time.Now()
	res, err := a.EnsureServingSecret(t.Context(), c, key, names, owner, now)
	must(t, err, "first ensure")
	assertWrites(t, writes, "POST /namespaces/"+sys+"/secrets", "POST /namespaces/"+ns+"/secrets")
	s, first := secretPair(t, c, key)
	if s.Type != corev1.SecretTypeTLS || s.Labels["app.kubernetes.io/managed-by"] != "odh-serving" ||
		len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != svc.UID {
		t.Errorf("secret: type %s, labels %v, owners %v", s.Type, s.Labels, s.OwnerReferences)
	}
	if !res.Changed || !res.RenewAt.Before(first.Cert.NotAfter) {
		t.Errorf("first ensure: Changed=%v RenewAt=%s (expiry %s)", res.Changed, res.RenewAt, first.Cert.NotAfter)
	}

	for _, at := range []time.Time{now, now.Add(30 * time.Second), res.RenewAt.Add(-time.Second)} {
		r, err := a.EnsureServingSecret(t.Context(), c, key, names, owner, at)
		must(t, err, "ensure at %s", at)
		if r.Changed {
			t.Errorf("ensure at %s: Changed on a valid secret", at)
		}
		assertWrites(t, writes)
	}

	r, err := a.EnsureServingSecret(t.Context(), c, key, names, owner, res.RenewAt)
	must(t, err, "ensure at the renewal time")
	assertWrites(t, writes, "PUT /namespaces/"+ns+"/secrets/"+key.Name)
	_, second := secretPair(t, c, key)
	if !r.Changed || second.Cert.SerialNumber.Cmp(first.Cert.SerialNumber) == 0 {
		t.Error("at the renewal time: not rotated")
	}

	more := append([]string{"chat-epp-service." + ns + ".svc"}, names...)
	_, err = a.EnsureServingSecret(t.Context(), c, key, more, owner, res.RenewAt)
	must(t, err, "ensure with a new name")
	assertWrites(t, writes, "PUT /namespaces/"+ns+"/secrets/"+key.Name)
	_, third := secretPair(t, c, key)
	if rotate, why := certs.NeedsRotation(third.Cert, more, res.RenewAt, certs.DefaultRenewWindow); rotate {
		t.Errorf("after a name was added: %s", why)
	}

	// A KServe-era secret of the same name, type Opaque (immutable).
	legacy := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "old-kserve-self-signed-certs", Namespace: ns},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"tls.crt": []byte("rsa"), "tls.key": []byte("rsa")},
	}
	must(t, cp.Client.Create(t.Context(), legacy), "create legacy secret")
	_, err = a.EnsureServingSecret(t.Context(), c, client.ObjectKeyFromObject(legacy), names, owner, res.RenewAt)
	must(t, err, "take over the legacy secret")
	assertWrites(t, writes, "PUT /namespaces/"+ns+"/secrets/"+legacy.Name)
	taken, _ := secretPair(t, c, client.ObjectKeyFromObject(legacy))
	if taken.Type != corev1.SecretTypeOpaque || len(taken.Data["ca.crt"]) == 0 {
		t.Errorf("legacy secret after take-over: type %s, ca.crt %d bytes", taken.Type, len(taken.Data["ca.crt"]))
	}
}

const qwen = `
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata:
  name: qwen
spec:
  model:
    uri: hf://Qwen/Qwen2.5-7B-Instruct
  template:
    containers:
    - name: main
      image: vllm
`

// createService creates qwen, renamed, as v1alpha1: the API server calls
// the validating webhook and then the conversion webhook (v1alpha2 is
// stored).
func createService(ctx context.Context, t *testing.T, c client.Client, ns, name, image string) error {
	t.Helper()
	u := &unstructured.Unstructured{}
	must(t, yaml.Unmarshal([]byte(strings.Replace(qwen, "image: vllm", image, 1)), &u.Object), "decode qwen")
	u.SetNamespace(ns)
	u.SetName(name)
	return c.Create(ctx, u)
}

// TestIntegrationWebhookCerts: the API server, given only the injected CA
// bundle, validates and converts through a webhook server presenting the
// certificate from the files, before and after a rotation; the second pass
// of Ensure writes nothing.
func TestIntegrationWebhookCerts(t *testing.T) {
	c, writes := testenv.RecordingClient(t, cp.Config, cp.Scheme)
	ns, sys := testenv.NewNamespace(t, cp.Client, "certs"), testenv.NewNamespace(t, cp.Client, "certs-sys")
	restoreWebhooks(t)
	dir := filepath.Join(t.TempDir(), "serving-certs")
	// The API server checks certificates against the real time, so the fake
	// clock starts in the past: the first leaf (valid 10 min from 30 s
	// before issue) enters its renewal window 6.5 min after issue, now.
	start := time.Now()
	clk := testingclock.NewFakeClock(start.Add(-390 * time.Second))
	w := &certs.WebhookCerts{
		Client: c, Namespace: sys, ServiceName: "odh-serving-webhook", ExtraNames: []string{"127.0.0.1"}, CertDir: dir,
		CA:    &certs.Authority{Secret: types.NamespacedName{Namespace: sys, Name: certs.CASecretName}, Lifetimes: certs.Lifetimes{Leaf: 10 * time.Minute}},
		Clock: clk,
	}

	res, err := w.Ensure(t.Context())
	must(t, err, "first Ensure")
	assertWrites(t, writes,
		"POST /namespaces/"+sys+"/secrets",
		"PATCH /validatingwebhookconfigurations/odh-serving-validation",
		"PATCH /customresourcedefinitions/llminferenceservices.serving.kserve.io",
		"PATCH /customresourcedefinitions/llminferenceserviceconfigs.serving.kserve.io",
		"POST /namespaces/"+sys+"/secrets")
	if !res.Changed {
		t.Error("first Ensure: Changed is false")
	}
	bundle, err := w.CA.Bundle(t.Context(), c, clk.Now())
	must(t, err, "bundle")

	ws := startWebhookServer(t, dir)
	pointWebhooksAt(t, ws.URL)
	_, err = w.Ensure(t.Context())
	must(t, err, "second Ensure")
	assertWrites(t, writes)

	// The API server may take a moment to see the new webhook addresses.
	testenv.Eventually(t, "a service admitted and converted through the new webhook", func() error {
		return createService(t.Context(), t, cp.Client, ns, "qwen", "image: vllm")
	})
	got := &v1alpha2.LLMInferenceService{}
	must(t, cp.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "qwen"}, got), "read back as v1alpha2")
	if ws.validated.Load() == 0 || ws.converts.Load() == 0 {
		t.Fatalf("webhook calls: %d validate, %d convert; want both", ws.validated.Load(), ws.converts.Load())
	}
	err = createService(t.Context(), t, cp.Client, ns, "typo", "imagee: vllm")
	if err == nil || !strings.Contains(err.Error(), "imagee") {
		t.Errorf("a typo in the pod template: err = %v, want it rejected by the webhook", err)
	}
	firstServed := ws.served(bundle)
	if firstServed == nil {
		t.Fatal("the webhook server's certificate does not verify against the bundle")
	}

	// Rotation: at the renewal time only the webhook secret is written; the
	// server picks up the new files and the API server keeps calling it.
	clk.SetTime(res.RenewAt)
	res2, err := w.Ensure(t.Context())
	must(t, err, "Ensure at the renewal time")
	assertWrites(t, writes, "PUT /namespaces/"+sys+"/secrets/odh-serving-webhook-cert")
	if !res2.Changed || !res2.RenewAt.After(res.RenewAt) {
		t.Errorf("rotation: Changed=%v, next renewal %s", res2.Changed, res2.RenewAt)
	}
	var rotated *x509.Certificate
	testenv.Eventually(t, "the rotated certificate served", func() error {
		if rotated = ws.served(bundle); rotated == nil || rotated.Equal(firstServed) {
			return errors.New("the server presents the first certificate or none that verifies")
		}
		return nil
	})
	_, onDisk := secretPair(t, c, types.NamespacedName{Namespace: sys, Name: certs.WebhookSecretName})
	if !rotated.Equal(onDisk.Cert) {
		t.Error("the server presents a certificate other than the secret's")
	}
	calls := ws.validated.Load()
	must(t, createService(t.Context(), t, cp.Client, ns, "after-rotation", "image: vllm"), "create after rotation")
	if ws.validated.Load() == calls {
		t.Error("no validation call after rotation")
	}
	_, err = w.Ensure(t.Context())
	must(t, err, "Ensure after rotation")
	assertWrites(t, writes)
}

// TestIntegrationWebhookCARotation: when the CA rotates, the new bundle
// (new and old CA) reaches the webhook configuration and the CRDs before
// the webhook secret is reissued from the new CA, and the API server keeps
// calling the webhook.
func TestIntegrationWebhookCARotation(t *testing.T) {
	c, writes := testenv.RecordingClient(t, cp.Config, cp.Scheme)
	ns, sys := testenv.NewNamespace(t, cp.Client, "certs"), testenv.NewNamespace(t, cp.Client, "certs-sys")
	restoreWebhooks(t)
	dir := t.TempDir()
	// A 30-minute CA enters its renewal window 19.5 min after issue (valid
	// from 1.5 min before); start the fake clock that far in the past. The
	// 25-minute leaf issued then is still valid now.
	clk := testingclock.NewFakeClock(time.Now().Add(-1170 * time.Second))
	caKey := types.NamespacedName{Namespace: sys, Name: "ca-rotation"}
	w := &certs.WebhookCerts{
		Client: c, Namespace: sys, ServiceName: "odh-serving-webhook", ExtraNames: []string{"127.0.0.1"}, CertDir: dir,
		SecretName: "webhook-ca-rotation",
		CA:         &certs.Authority{Secret: caKey, Lifetimes: certs.Lifetimes{CA: 30 * time.Minute, Leaf: 25 * time.Minute}},
		Clock:      clk,
	}
	_, err := w.Ensure(t.Context())
	must(t, err, "first Ensure")
	writes.Take()
	oldCA, _ := secretPair(t, c, caKey)
	ws := startWebhookServer(t, dir)
	pointWebhooksAt(t, ws.URL)
	testenv.Eventually(t, "a service admitted through the webhook", func() error {
		return createService(t.Context(), t, cp.Client, ns, "before", "image: vllm")
	})

	_, caPair := secretPair(t, c, caKey)
	clk.SetTime(certs.RenewAt(caPair.Cert, certs.DefaultRenewWindow))
	_, err = w.Ensure(t.Context())
	must(t, err, "Ensure at the CA's renewal time")
	assertWrites(t, writes,
		"PUT /namespaces/"+sys+"/secrets/ca-rotation",
		"PATCH /validatingwebhookconfigurations/odh-serving-validation",
		"PATCH /customresourcedefinitions/llminferenceservices.serving.kserve.io",
		"PATCH /customresourcedefinitions/llminferenceserviceconfigs.serving.kserve.io",
		"PUT /namespaces/"+sys+"/secrets/webhook-ca-rotation")
	newCA, newPair := secretPair(t, c, caKey)
	bundle, err := certs.ParseCertificates(newCA.Data["ca.crt"])
	must(t, err, "new bundle")
	if len(bundle) != 2 || !bundle[0].Equal(newPair.Cert) || !bytes.Contains(newCA.Data["ca.crt"], oldCA.Data["tls.crt"]) {
		t.Fatalf("bundle after CA rotation: %d certificates, want the new CA then the old", len(bundle))
	}
	testenv.Eventually(t, "the leaf from the new CA served", func() error {
		if got := ws.served(newCA.Data["ca.crt"]); got == nil || !certs.SignedBy(got, bundle[:1]) {
			return errors.New("the server presents no certificate from the new CA")
		}
		return nil
	})
	testenv.Eventually(t, "a service admitted after the CA rotation", func() error {
		return createService(t.Context(), t, cp.Client, ns, "after", "image: vllm")
	})
	_, err = w.Ensure(t.Context())
	must(t, err, "Ensure after CA rotation")
	assertWrites(t, writes)
}

// TestIntegrationPublishBundle: the CA bundle goes into a Secret and a
// ConfigMap, created once; the same bundle again writes nothing, a new one
// is patched over the old, and a kind that cannot hold it is refused by
// name.
func TestIntegrationPublishBundle(t *testing.T) {
	c, writes := testenv.RecordingClient(t, cp.Config, cp.Scheme)
	ns := testenv.NewNamespace(t, cp.Client, "bundle")
	first, second := []byte("-----BEGIN CERTIFICATE-----\nfirst\n"), []byte("-----BEGIN CERTIFICATE-----\nsecond\n")
	path := "/namespaces/" + ns + "/secrets"

	must(t, certs.PublishBundle(t.Context(), c, c, &corev1.Secret{}, ns, first), "publish to a Secret")
	assertWrites(t, writes, "POST "+path)
	must(t, certs.PublishBundle(t.Context(), c, c, &corev1.Secret{}, ns, first), "publish the same bundle")
	assertWrites(t, writes)
	must(t, certs.PublishBundle(t.Context(), c, c, &corev1.Secret{}, ns, second), "publish a new bundle")
	assertWrites(t, writes, "PATCH "+path+"/odh-serving-ca-bundle")
	s := &corev1.Secret{}
	must(t, c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "odh-serving-ca-bundle"}, s), "get the Secret")
	if !bytes.Equal(s.Data["ca.crt"], second) || s.Labels["app.kubernetes.io/managed-by"] != "odh-serving" {
		t.Errorf("Secret: ca.crt %q, labels %v; want the second bundle, managed by odh-serving", s.Data["ca.crt"], s.Labels)
	}

	must(t, certs.PublishBundle(t.Context(), c, c, &corev1.ConfigMap{}, ns, first), "publish to a ConfigMap")
	assertWrites(t, writes, "POST /namespaces/"+ns+"/configmaps")
	must(t, certs.PublishBundle(t.Context(), c, c, &corev1.ConfigMap{}, ns, first), "publish the same bundle to the ConfigMap")
	assertWrites(t, writes)

	err := certs.PublishBundle(t.Context(), c, c, &corev1.ServiceAccount{}, ns, first)
	if err == nil || !strings.Contains(err.Error(), ns+"/odh-serving-ca-bundle") || !strings.Contains(err.Error(), "ServiceAccount") {
		t.Errorf("publish to a ServiceAccount: error %v, want one naming the object and the kind", err)
	}
	assertWrites(t, writes)
}

// TestIntegrationPublishBundleLeavesForeignObjects: a Secret or ConfigMap
// named odh-serving-ca-bundle without our managed-by label is someone
// else's: PublishBundle refuses it with certs.ErrNotManaged, naming it, and
// writes nothing.
func TestIntegrationPublishBundleLeavesForeignObjects(t *testing.T) {
	c, writes := testenv.RecordingClient(t, cp.Config, cp.Scheme)
	ns := testenv.NewNamespace(t, cp.Client, "foreign")
	meta := metav1.ObjectMeta{Namespace: ns, Name: "odh-serving-ca-bundle", Labels: map[string]string{"app.kubernetes.io/managed-by": "someone-else"}}
	for _, tc := range []struct {
		kind     string
		o, empty client.Object
	}{
		{"Secret", &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"ca.crt": []byte("theirs")}}, &corev1.Secret{}},
		{"ConfigMap", &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"ca.crt": "theirs"}}, &corev1.ConfigMap{}},
	} {
		o, kind := tc.o, tc.kind
		must(t, cp.Client.Create(t.Context(), o), "create the foreign object")
		err := certs.PublishBundle(t.Context(), c, c, tc.empty, ns, []byte("-----BEGIN CERTIFICATE-----\nours\n"))
		if !errors.Is(err, certs.ErrNotManaged) || !strings.Contains(err.Error(), kind+" "+ns+"/odh-serving-ca-bundle") {
			t.Errorf("publish over a foreign %s: error %v, want ErrNotManaged naming it", kind, err)
		}
		assertWrites(t, writes)
		live := o.DeepCopyObject().(client.Object)
		must(t, cp.Client.Get(t.Context(), client.ObjectKeyFromObject(o), live), "get the foreign object")
		if live.GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("the foreign %s changed: resourceVersion %s, was %s", kind, live.GetResourceVersion(), o.GetResourceVersion())
		}
	}
}
