package security

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestWebhookServerTLS starts the webhook server exactly as the controller
// builds it (controller.NewManager) and checks that it completes TLS 1.2
// and 1.3 handshakes and refuses TLS 1.0 and 1.1.
func TestWebhookServerTLS(t *testing.T) {
	dir := t.TempDir()
	roots := writeServingCert(t, dir, "127.0.0.1")
	port := testenv.FreePort(t)
	mgr, err := controller.NewManager(t.Context(), cp.Config, controller.Options{
		WebhookPort: port, WebhookCertDir: dir, MetricsBindAddress: "0", HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	server := mgr.GetWebhookServer()
	testenv.Start(t, "webhook server", server.Start)
	testenv.Eventually(t, "the webhook server to start", func() error { return server.StartedChecker()(nil) })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for _, tc := range []struct {
		version uint16
		ok      bool
	}{{tls.VersionTLS10, false}, {tls.VersionTLS11, false}, {tls.VersionTLS12, true}, {tls.VersionTLS13, true}} {
		name := tls.VersionName(tc.version)
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{ //nolint:gosec // offering old versions is the test
			RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tc.version, MaxVersion: tc.version,
			NextProtos: []string{"h2", "http/1.1"},
		})
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s handshake failed: %v", name, err)
		case !tc.ok && err == nil:
			t.Errorf("the webhook server accepted %s", name)
		}
		if err == nil {
			if got := conn.ConnectionState().Version; got != tc.version {
				t.Errorf("asked for %s, got %s", name, tls.VersionName(got))
			}
			if p := conn.ConnectionState().NegotiatedProtocol; p == "h2" {
				t.Errorf("%s: the webhook server agreed to HTTP/2; it serves HTTP/1.1 only", name)
			}
			_ = conn.Close()
		}
	}
}

// TestControlPlaneWebhookServerTLS: the webhook server of the tests'
// control plane (test/controlplane) takes the controller's TLS settings
// (controller.WebhookTLS) and serves HTTP/1.1 only, as the controller's
// does. It served HTTP/2, and then the kube-apiserver kept its connection
// open after the server's GOAWAY: every test package's ControlPlane.Stop
// waited the second x/net/http2 gives a client to close it.
func TestControlPlaneWebhookServerTLS(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", cp.Ports()[3].Number)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // envtest's certificate, on loopback: the protocol is the test
		NextProtos:         []string{"h2", "http/1.1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if st := conn.ConnectionState(); st.NegotiatedProtocol != "http/1.1" || st.Version < tls.VersionTLS12 {
		t.Errorf("the control plane's webhook server at %s agreed to %q over %s, want http/1.1 over TLS 1.2 or newer", addr, st.NegotiatedProtocol, tls.VersionName(st.Version))
	}
}

// TestEndpointPickerSecureServing checks every endpoint picker rendered from
// every golden input: it runs with --secure-serving, its --cert-path is a
// mounted Secret, and the model servers it routes to serve HTTPS. The
// endpoint picker is Go (GIE's epp): its TLS server uses Go's defaults,
// TLS 1.2 or newer.
func TestEndpointPickerSecureServing(t *testing.T) {
	pickers := 0
	for _, r := range renderGolden(t) {
		for _, o := range r.objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			var d appsv1.Deployment
			fromUnstructured(t, o, &d)
			where := fmt.Sprintf("%s: Deployment %s", r.source, d.Name)
			pod := d.Spec.Template.Spec
			main := container(pod, build.MainContainer)
			if main == nil {
				t.Errorf("%s has no %s container", where, build.MainContainer)
				continue
			}
			if d.Labels["app.kubernetes.io/component"] != build.ComponentScheduler {
				checkServesHTTPS(t, where, main)
				continue
			}
			pickers++
			args := append(slices.Clone(main.Command), main.Args...)
			if !slices.Contains(args, "--secure-serving") || slices.Contains(args, "--secure-serving=false") {
				t.Errorf("%s: the endpoint picker runs without --secure-serving: %v", where, args)
			}
			i := slices.Index(args, "--cert-path")
			if i < 0 || i+1 >= len(args) {
				t.Errorf("%s: the endpoint picker has no --cert-path", where)
				continue
			}
			if !mountsSecret(pod, main, args[i+1]) {
				t.Errorf("%s: --cert-path %s is not a mounted Secret", where, args[i+1])
			}
		}
	}
	if pickers < 20 {
		t.Errorf("checked only %d endpoint pickers", pickers)
	}
}

// checkServesHTTPS requires the model server's probes to speak HTTPS.
func checkServesHTTPS(t *testing.T, where string, c *corev1.Container) {
	t.Helper()
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p != nil && p.HTTPGet != nil && p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("%s: the %s probe uses %s; the model server serves HTTPS", where, name, p.HTTPGet.Scheme)
		}
	}
}

func container(pod corev1.PodSpec, name string) *corev1.Container {
	for i := range pod.Containers {
		if pod.Containers[i].Name == name {
			return &pod.Containers[i]
		}
	}
	return nil
}

// mountsSecret reports whether path is where c mounts a Secret volume.
func mountsSecret(pod corev1.PodSpec, c *corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if strings.TrimSuffix(m.MountPath, "/") != strings.TrimSuffix(path, "/") {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && (v.Secret != nil || v.Projected != nil) {
				return true
			}
		}
	}
	return false
}

// writeServingCert writes a tls.crt and tls.key for ip, issued by a new CA
// with internal/certs as the controller does, into dir and returns a pool
// that trusts the CA.
func writeServingCert(t *testing.T, dir, ip string) *x509.CertPool {
	t.Helper()
	now := time.Now()
	ca, err := certs.NewCA("security-test", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := certs.Issue(ca, []string{ip}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}
