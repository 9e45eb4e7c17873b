package certs_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// assertWrites checks the writes since the last check, in order: each
// want is "METHOD substring-of-path".
func assertWrites(t *testing.T, log *testenv.Recorder, want ...string) {
	t.Helper()
	got := log.Take()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		method, path, _ := strings.Cut(want[i], " ")
		ok = strings.HasPrefix(got[i], method+" ") && strings.Contains(got[i], path)
	}
	if !ok {
		t.Errorf("writes:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// webhookServer is controller-runtime's webhook server with odh-serving's
// handlers, serving the certificates in a folder and counting its calls.
type webhookServer struct {
	URL                 string
	port                int
	validated, converts atomic.Int64
}

func countCalls(n *atomic.Int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	})
}

// startWebhookServer starts the server on certDir, which must hold the pair.
func startWebhookServer(t *testing.T, certDir string) *webhookServer {
	t.Helper()
	port := testenv.FreePort(t)
	ws := &webhookServer{URL: "https://127.0.0.1:" + strconv.Itoa(port), port: port}
	server := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
	server.Register(webhook.ValidatePath, countCalls(&ws.validated, &ctrlwebhook.Admission{Handler: webhook.Validator{}}))
	server.Register(webhook.ConvertPath, countCalls(&ws.converts, webhook.Converter{}))
	testenv.Start(t, "webhook server", server.Start)
	testenv.Eventually(t, "the webhook server to listen", func() error { return server.StartedChecker()(nil) })
	return ws
}

// served is the certificate the server presents to a client trusting
// bundle, or nil when the handshake fails.
func (ws *webhookServer) served(bundle []byte) *x509.Certificate {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ws.port)),
		&tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// restoreWebhooks puts the control plane's webhook addresses and CA
// bundles back when the test ends, as they are now.
func restoreWebhooks(t *testing.T) {
	t.Helper()
	type saved struct {
		url    *string
		bundle []byte
	}
	vwc := &admissionv1.ValidatingWebhookConfiguration{}
	must(t, cp.Client.Get(t.Context(), vwcKey, vwc), "get the webhook configuration")
	var vwcSaved []saved
	for _, wh := range vwc.Webhooks {
		vwcSaved = append(vwcSaved, saved{wh.ClientConfig.URL, wh.ClientConfig.CABundle})
	}
	crdSaved := map[string]saved{}
	for _, name := range certs.DefaultCRDNames {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		must(t, cp.Client.Get(t.Context(), types.NamespacedName{Name: name}, crd), "get CRD %s", name)
		cc := conversionConfig(t, crd)
		crdSaved[name] = saved{cc.URL, cc.CABundle}
	}
	t.Cleanup(func() {
		update(t, vwcKey, &admissionv1.ValidatingWebhookConfiguration{}, func(o client.Object) {
			vwc := o.(*admissionv1.ValidatingWebhookConfiguration)
			for i := range vwc.Webhooks {
				vwc.Webhooks[i].ClientConfig.URL, vwc.Webhooks[i].ClientConfig.CABundle = vwcSaved[i].url, vwcSaved[i].bundle
			}
		})
		for name, s := range crdSaved {
			update(t, types.NamespacedName{Name: name}, &apiextensionsv1.CustomResourceDefinition{}, func(o client.Object) {
				cc := conversionConfig(t, o.(*apiextensionsv1.CustomResourceDefinition))
				cc.URL, cc.CABundle = s.url, s.bundle
			})
		}
		// The API server takes a moment to see the change; the next test
		// must find the control plane's own webhooks working.
		// (t.Context() is done by now; Eventually polls all the same.)
		testenv.Eventually(t, "the control plane's webhooks back", func() error {
			return createService(context.Background(), t, client.NewDryRunClient(cp.Client), "default", "probe", "image: vllm")
		})
	})
}

var vwcKey = types.NamespacedName{Name: webhook.ValidatingConfigurationName}

// pointWebhooksAt sends the API server's validating and conversion calls
// to url instead of the control plane's own webhook server.
func pointWebhooksAt(t *testing.T, url string) {
	t.Helper()
	update(t, vwcKey, &admissionv1.ValidatingWebhookConfiguration{}, func(o client.Object) {
		vwc := o.(*admissionv1.ValidatingWebhookConfiguration)
		for i := range vwc.Webhooks {
			vwc.Webhooks[i].ClientConfig.URL = ptr.To(url + webhook.ValidatePath)
		}
	})
	for _, name := range certs.DefaultCRDNames {
		update(t, types.NamespacedName{Name: name}, &apiextensionsv1.CustomResourceDefinition{}, func(o client.Object) {
			conversionConfig(t, o.(*apiextensionsv1.CustomResourceDefinition)).URL = ptr.To(url + webhook.ConvertPath)
		})
	}
}

func conversionConfig(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.WebhookClientConfig {
	t.Helper()
	conv := crd.Spec.Conversion
	if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		t.Fatalf("CRD %s has no conversion webhook", crd.Name)
	}
	return conv.Webhook.ClientConfig
}

func update(t *testing.T, key types.NamespacedName, obj client.Object, mutate func(client.Object)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cp.Client.Get(context.Background(), key, obj); err != nil {
			return err
		}
		mutate(obj)
		return cp.Client.Update(context.Background(), obj)
	})
	if err != nil {
		t.Fatalf("update %s: %v", key.Name, err)
	}
}

// must fails the test on err.
func must(t *testing.T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}
