package apiserver

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// direct sends GET path straight to the api-server's port (not through the
// kube-apiserver) with headers, presenting cert when not nil, and returns
// the status code and body.
func direct(tb testing.TB, path string, cert *tls.Certificate, headers map[string]string) (int, []byte) {
	tb.Helper()
	return send(tb, http.MethodGet, path, http.NoBody, cert, headers)
}

// send sends method path with body straight to the api-server's port
// with headers, presenting cert when not nil, and returns the status code
// and body.
func send(tb testing.TB, method, path string, body io.Reader, cert *tls.Certificate, headers map[string]string) (int, []byte) {
	tb.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(server.servingCA)
	tlsConfig := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		tlsConfig.Certificates = []tls.Certificate{*cert}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	req, err := http.NewRequestWithContext(tb.Context(), method, "https://"+server.address+path, body)
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, out
}

// TestForgedIdentityHeaders: X-Remote-User and X-Remote-Group count only
// on a connection with the front proxy's client certificate (the class of
// CVE-2026-14450). Without it a forged admin is anonymous, and a user's
// own certificate keeps the user's identity whatever the headers say.
func TestForgedIdentityHeaders(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "forged")
	publish(t, ns, "free-only", tiersJSON("free"))
	publish(t, ns, "premium-only", tiersJSON("premium"))
	newUser(t, freeUser).waitModels(t, ns, ns+"/free-only")
	path := "/apis/" + modelv1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/models"
	forged := map[string]string{"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}

	code, body := direct(t, path, nil, forged)
	status := &metav1.Status{}
	if err := json.Unmarshal(body, status); err != nil || code != http.StatusForbidden || status.Kind != "Status" || !json.Valid(body) ||
		!containsAll(status.Message, `User "system:anonymous"`, `cannot list resource "models"`) {
		t.Errorf("forged admin headers without a client certificate: %d %s, want 403 for system:anonymous", code, body)
	}

	// bob's own client certificate (the cluster's client CA) with headers
	// claiming a premium admin: still bob, in the free tier.
	bobCfg, _ := userConfig(t, freeUser)
	bobCert, err := tls.X509KeyPair(bobCfg.CertData, bobCfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	if got := directModels(t, path, &bobCert, map[string]string{"X-Remote-User": premiumUser, "X-Remote-Group": "premium-users"}); got != "[free-only]" {
		t.Errorf("bob's certificate with forged premium headers lists %s, want bob's own [free-only]", got)
	}

	// The control: the same headers on the front proxy's certificate are
	// the identity, so the refusals above are the certificate's doing.
	proxyCert, err := tls.X509KeyPair(server.frontProxyCert, server.frontProxyKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := directModels(t, path, &proxyCert, map[string]string{"X-Remote-User": premiumUser, "X-Remote-Group": "premium-users"}); got != "[premium-only]" {
		t.Errorf("the front proxy's certificate with alice's headers lists %s, want [premium-only]", got)
	}
}

// directModels lists models straight from the api-server and returns the
// names, or the failure.
func directModels(t *testing.T, path string, cert *tls.Certificate, headers map[string]string) string {
	t.Helper()
	code, body := direct(t, path, cert, headers)
	if code != http.StatusOK {
		return fmt.Sprintf("HTTP %d: %s", code, body)
	}
	list := &modelv1alpha1.ModelList{}
	if err := json.Unmarshal(body, list); err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(list.Items))
	for i, m := range list.Items {
		names[i] = m.Name
	}
	return fmt.Sprint(names)
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestReadyz: readiness, which the chart's probe asks anonymously, waits
// for the tier ConfigMap and service informers.
func TestReadyz(t *testing.T) {
	code, body := direct(t, "/readyz?verbose", nil, nil)
	if code != http.StatusOK || !containsAll(string(body), "[+]tier-config-informer-synced ok", "[+]llminferenceservice-informer-synced ok") {
		t.Errorf("/readyz: %d %s", code, body)
	}
}
