package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestServeTLS serves with an issued certificate and TLS 1.2 as the floor:
// a client that trusts the CA connects by name and by IP, a client that
// trusts something else or speaks TLS 1.1 does not.
func TestServeTLS(t *testing.T) {
	now := time.Now()
	ca := newCA(t, now, time.Hour)
	leaf := issue(t, ca, []string{"webhook.system.svc", "127.0.0.1"}, now, 10*time.Minute)
	pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes below are expected
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()
	addr := srv.Listener.Addr().(*net.TCPAddr)

	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	dial := func(cfg *tls.Config) (*tls.ConnectionState, error) {
		conn, err := tls.Dial("tcp", addr.String(), cfg)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		st := conn.ConnectionState()
		return &st, nil
	}

	for _, name := range []string{"webhook.system.svc", "127.0.0.1"} {
		st, err := dial(&tls.Config{RootCAs: roots, ServerName: name, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Errorf("client trusting the CA, server name %s: %v", name, err)
			continue
		}
		if !st.PeerCertificates[0].Equal(leaf.Cert) {
			t.Errorf("server name %s: served another certificate", name)
		}
	}
	// A full HTTP round trip with the CA as the only root.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "webhook.system.svc", MinVersion: tls.VersionTLS12}}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("HTTPS GET: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Errorf("body %q, want ok", body)
	}

	if _, err := dial(&tls.Config{RootCAs: roots, ServerName: "other.system.svc", MinVersion: tls.VersionTLS12}); err == nil {
		t.Error("name not in the certificate: connected")
	}
	other := x509.NewCertPool()
	other.AddCert(newCA(t, now, time.Hour).Cert)
	if _, err := dial(&tls.Config{RootCAs: other, ServerName: "webhook.system.svc", MinVersion: tls.VersionTLS12}); err == nil {
		t.Error("client trusting another CA: connected")
	}
	//nolint:gosec // the point: an old protocol must be refused
	old := &tls.Config{RootCAs: roots, ServerName: "webhook.system.svc", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	st, err := dial(old)
	if err == nil {
		t.Fatalf("TLS 1.1 client connected with version %x", st.Version)
	}
	if !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("TLS 1.1 client failed for another reason than the version: %v", err)
	}
}
