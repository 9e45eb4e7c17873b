package certs_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var webhookNames = []string{"odh-serving-webhook.opendatahub.svc", "odh-serving-webhook.opendatahub.svc.cluster.local", "127.0.0.1"}

func conversionCRD(name string, webhookConversion bool) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if webhookConversion {
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig: &apiextensionsv1.WebhookClientConfig{
					Service: &apiextensionsv1.ServiceReference{Namespace: systemNS, Name: "odh-serving-webhook", Path: ptr.To("/convert")},
				},
				ConversionReviewVersions: []string{"v1"},
			},
		}
	} else {
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	}
	return crd
}

func newWebhookCerts(c client.Client, clk *testingclock.FakeClock, dir string, life certs.Lifetimes) *certs.WebhookCerts {
	return &certs.WebhookCerts{
		Client: c, Namespace: systemNS, ServiceName: "odh-serving-webhook", ExtraNames: []string{"127.0.0.1"},
		CertDir: dir, CA: &certs.Authority{Secret: caKey, Lifetimes: life}, Clock: clk,
	}
}

// files returns the pair in dir and checks the certificate against the
// bundle for every webhook name at now.
func files(t *testing.T, dir string, bundle []byte, now time.Time) *x509.Certificate {
	t.Helper()
	cert, err := readFiles(dir, bundle, now)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func readFiles(dir string, bundle []byte, now time.Time) (*x509.Certificate, error) {
	crt, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(filepath.Join(dir, "tls.key"))
	if err != nil {
		return nil, err
	}
	pair, err := certs.ParsePair(crt, key)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return nil, errors.New("bundle holds no certificate")
	}
	for _, n := range webhookNames {
		if _, err := pair.Cert.Verify(x509.VerifyOptions{DNSName: n, Roots: roots, CurrentTime: now}); err != nil {
			return nil, fmt.Errorf("webhook certificate for %s: %w", n, err)
		}
	}
	return pair.Cert, nil
}

func TestWebhookCertsEnsure(t *testing.T) {
	vwc := webhook.ValidatingConfiguration(systemNS, "odh-serving-webhook", nil)
	vwc.Webhooks = append(vwc.Webhooks, *vwc.Webhooks[0].DeepCopy())
	vwc.Webhooks[1].Name = "second.llmisvc.serving.kserve.io"
	c := newClient(t, vwc,
		conversionCRD("llminferenceservices.serving.kserve.io", true),
		conversionCRD("llminferenceserviceconfigs.serving.kserve.io", false))
	dir := filepath.Join(t.TempDir(), "serving-certs")
	w := newWebhookCerts(c, testingclock.NewFakeClock(t0), dir, certs.Lifetimes{})

	res, err := w.Ensure(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// CA, VWC, one CRD, the webhook secret.
	if n := c.take(); !res.Changed || n != 4 {
		t.Fatalf("first Ensure: Changed=%v with %d writes, want 4", res.Changed, n)
	}
	secret := getSecret(t, c, types.NamespacedName{Namespace: systemNS, Name: "odh-serving-webhook-cert"})
	bundle := secret.Data["ca.crt"]
	leaf := files(t, dir, bundle, t0)
	if !bytes.Equal(leaf.Raw, mustParse(t, secret.Data["tls.crt"]).Raw) {
		t.Error("the files and the secret hold different certificates")
	}
	got := &admissionv1.ValidatingWebhookConfiguration{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: webhook.ValidatingConfigurationName}, got); err != nil {
		t.Fatal(err)
	}
	for _, wh := range got.Webhooks {
		if !bytes.Equal(wh.ClientConfig.CABundle, bundle) {
			t.Errorf("webhook %s: caBundle not injected", wh.Name)
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: "llminferenceservices.serving.kserve.io"}, crd); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(crd.Spec.Conversion.Webhook.ClientConfig.CABundle, bundle) {
		t.Error("conversion webhook caBundle not injected")
	}
	if err := c.Get(t.Context(), types.NamespacedName{Name: "llminferenceserviceconfigs.serving.kserve.io"}, crd); err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Conversion.Webhook != nil {
		t.Error("a CRD without webhook conversion got one")
	}

	stat := func() time.Time {
		fi, err := os.Stat(filepath.Join(dir, "tls.crt"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	mtime := stat()
	res, err = w.Ensure(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := c.take(); res.Changed || n != 0 {
		t.Errorf("second Ensure: Changed=%v with %d writes, want none", res.Changed, n)
	}
	if !stat().Equal(mtime) {
		t.Error("second Ensure rewrote the certificate file")
	}

	// A file lost (a new pod with an empty folder) is written again from
	// the secret, without touching the cluster.
	if err := os.Remove(filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Ensure(t.Context()); err != nil || !res.Changed || c.take() != 0 {
		t.Errorf("Ensure after losing tls.key: Changed=%v err=%v, want the file rewritten and no API writes", res.Changed, err)
	}
	files(t, dir, bundle, t0)
}

func mustParse(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	cs, err := certs.ParseCertificates(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

// In static mode the CA goes into the replicas webhook's configuration too
// (MutatingConfigName); a missing one is no error.
func TestWebhookCertsInjectsTheReplicasWebhook(t *testing.T) {
	mwc := &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhook.MutatingConfigurationName},
		Webhooks: []admissionv1.MutatingWebhook{{Name: "replicas.workloads.serving.kserve.io", ClientConfig: admissionv1.WebhookClientConfig{
			Service: &admissionv1.ServiceReference{Namespace: systemNS, Name: "odh-serving-webhook", Path: ptr.To(webhook.ReplicasPath)},
		}}},
	}
	c := newClient(t, webhook.ValidatingConfiguration(systemNS, "odh-serving-webhook", nil), mwc)
	w := newWebhookCerts(c, testingclock.NewFakeClock(t0), t.TempDir(), certs.Lifetimes{})
	w.MutatingConfigName = webhook.MutatingConfigurationName
	if _, err := w.Ensure(t.Context()); err != nil {
		t.Fatal(err)
	}
	bundle := getSecret(t, c, types.NamespacedName{Namespace: systemNS, Name: "odh-serving-webhook-cert"}).Data["ca.crt"]
	got := &admissionv1.MutatingWebhookConfiguration{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: webhook.MutatingConfigurationName}, got); err != nil {
		t.Fatal(err)
	}
	if len(bundle) == 0 || !bytes.Equal(got.Webhooks[0].ClientConfig.CABundle, bundle) {
		t.Errorf("%s: caBundle not injected", webhook.MutatingConfigurationName)
	}

	w = newWebhookCerts(newClient(t), testingclock.NewFakeClock(t0), t.TempDir(), certs.Lifetimes{})
	w.MutatingConfigName = webhook.MutatingConfigurationName
	if _, err := w.Ensure(t.Context()); err != nil {
		t.Errorf("no MutatingWebhookConfiguration: %v", err)
	}
}

func TestWebhookCertsWithoutConfiguration(t *testing.T) {
	c := newClient(t)
	w := newWebhookCerts(c, testingclock.NewFakeClock(t0), t.TempDir(), certs.Lifetimes{})
	if _, err := w.Ensure(t.Context()); err != nil {
		t.Fatalf("no VWC and no CRDs (a local run): %v", err)
	}
	if _, err := (&certs.WebhookCerts{Client: c}).Ensure(t.Context()); err == nil {
		t.Error("no namespace, service or folder: no error")
	}
}

// TestWebhookCertsRotationServed runs Start with a two-minute certificate
// behind controller-runtime's webhook server: at the renewal time Start
// wakes, rotates the files, and the server presents the new certificate
// (certwatcher) while the old one has not expired.
func TestWebhookCertsRotationServed(t *testing.T) {
	c := newClient(t, webhook.ValidatingConfiguration(systemNS, "odh-serving-webhook", nil))
	clk := testingclock.NewFakeClock(t0)
	dir := t.TempDir()
	w := newWebhookCerts(c, clk, dir, certs.Lifetimes{Leaf: 2 * time.Minute})
	w.CheckInterval = time.Hour
	res, err := w.Ensure(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := w.CA.Bundle(t.Context(), c, t0)
	if err != nil {
		t.Fatal(err)
	}
	first := files(t, dir, bundle, t0)

	port := testenv.FreePort(t)
	server := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	webhook.Register(server, webhook.Validator{})
	testenv.Start(t, "webhook server", server.Start)
	testenv.Start(t, "Start", w.Start)

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	served := func(now time.Time) *x509.Certificate {
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			&tls.Config{RootCAs: roots, ServerName: webhookNames[0], MinVersion: tls.VersionTLS12, Time: func() time.Time { return now }})
		if err != nil {
			return nil
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}
	testenv.Within(t, certwatcherWait, "the webhook server to present the first certificate", func() error {
		if got := served(t0); got == nil || !got.Equal(first) {
			return errors.New("it presents another certificate or none")
		}
		return nil
	})

	// Start is asleep until the renewal time, 78 s after t0.
	testenv.Within(t, certwatcherWait, "Start to sleep", func() error {
		if !clk.HasWaiters() {
			return errors.New("the clock has no waiters")
		}
		return nil
	})
	if want := t0.Add(78 * time.Second); !res.RenewAt.Equal(want) {
		t.Fatalf("RenewAt = %s, want %s", res.RenewAt, want)
	}
	clk.Step(res.RenewAt.Sub(t0))
	now := res.RenewAt
	if !now.Before(first.NotAfter) {
		t.Fatalf("renewal at %s is not before expiry %s", now, first.NotAfter)
	}
	var second *x509.Certificate
	testenv.Within(t, certwatcherWait, "the rotated certificate on disk and served", func() error {
		// The files may be caught between the key's and the certificate's rename.
		var err error
		if second, err = readFiles(dir, bundle, now); err != nil {
			return err
		}
		if got := served(now); second.Equal(first) || got == nil || !got.Equal(second) {
			return errors.New("the first certificate is still on disk or served")
		}
		return nil
	})
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Error("same serial after rotation")
	}
}

// certwatcherWait is how long the webhook server may take to serve new
// files: certwatcher polls every 10 s when it misses a file event.
const certwatcherWait = 20 * time.Second

// TestWebhookCertsReplicasRace: replica B creates the webhook secret while
// replica A is about to; A's create fails, A reads B's secret and both
// serve the same certificate from the same CA.
func TestWebhookCertsReplicasRace(t *testing.T) {
	var a, b *certs.WebhookCerts
	raced := false
	scheme := newClient(t).Scheme()
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() == certs.WebhookSecretName && !raced {
				raced = true
				if _, err := b.Ensure(ctx); err != nil {
					t.Errorf("replica B: %v", err)
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	clk := testingclock.NewFakeClock(t0)
	dirA, dirB := t.TempDir(), t.TempDir()
	a = newWebhookCerts(c, clk, dirA, certs.Lifetimes{})
	b = newWebhookCerts(c, clk, dirB, certs.Lifetimes{})
	if _, err := a.Ensure(t.Context()); err != nil {
		t.Fatalf("replica A: %v", err)
	}
	if !raced {
		t.Fatal("the race did not happen")
	}
	bundle, err := a.CA.Bundle(t.Context(), c, t0)
	if err != nil {
		t.Fatal(err)
	}
	secret := getSecret(t, c, types.NamespacedName{Namespace: systemNS, Name: certs.WebhookSecretName})
	want := mustParse(t, secret.Data["tls.crt"])
	for name, dir := range map[string]string{"A": dirA, "B": dirB} {
		if got := files(t, dir, bundle, t0); !got.Equal(want) {
			t.Errorf("replica %s serves a certificate other than the secret's", name)
		}
	}
}
