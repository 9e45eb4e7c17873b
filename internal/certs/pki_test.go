package certs_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/opendatahub-io/odh-serving/internal/certs"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

// t0 is a fixed start for the fake clocks.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newCA(t *testing.T, now time.Time, life time.Duration) *certs.KeyPair {
	t.Helper()
	ca, err := certs.NewCA("test CA", now, life)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issue(t *testing.T, ca *certs.KeyPair, names []string, now time.Time, life time.Duration) *certs.KeyPair {
	t.Helper()
	leaf, err := certs.Issue(ca, names, now, life)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func assertP256(t *testing.T, pair *certs.KeyPair) {
	t.Helper()
	key, ok := pair.Key.(*ecdsa.PrivateKey)
	if !ok || key.Curve != elliptic.P256() {
		t.Fatalf("key is %T, want an ECDSA P-256 key", pair.Key)
	}
	if pair.Cert.PublicKeyAlgorithm != x509.ECDSA || pair.Cert.SignatureAlgorithm != x509.ECDSAWithSHA256 {
		t.Errorf("certificate %s/%s, want ECDSA/ECDSAWithSHA256", pair.Cert.PublicKeyAlgorithm, pair.Cert.SignatureAlgorithm)
	}
}

func TestNewCA(t *testing.T) {
	ca := newCA(t, t0, certs.DefaultCALifetime)
	assertP256(t, ca)
	if !ca.Cert.IsCA || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("IsCA=%v KeyUsage=%b, want a CA that signs certificates", ca.Cert.IsCA, ca.Cert.KeyUsage)
	}
	if got, want := ca.Cert.NotAfter, t0.Add(365*24*time.Hour); !got.Equal(want) {
		t.Errorf("NotAfter = %s, want %s", got, want)
	}
	if got, want := ca.Cert.NotBefore, t0.Add(-5*time.Minute); !got.Equal(want) {
		t.Errorf("NotBefore = %s, want %s (backdated for clock skew)", got, want)
	}
	if _, err := certs.NewCA("x", t0, 0); err == nil {
		t.Error("NewCA with a zero lifetime: no error")
	}
}

func TestIssue(t *testing.T) {
	ca := newCA(t, t0, certs.DefaultCALifetime)
	names := []string{"svc.ns.svc", "SVC.ns.svc.cluster.local", "svc.ns.svc", "127.0.0.1", "::1"}
	leaf := issue(t, ca, names, t0, certs.DefaultLeafLifetime)
	assertP256(t, leaf)

	if got, want := strings.Join(leaf.Cert.DNSNames, ","), "svc.ns.svc,svc.ns.svc.cluster.local"; got != want {
		t.Errorf("DNSNames = %s, want %s", got, want)
	}
	if len(leaf.Cert.IPAddresses) != 2 || !leaf.Cert.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("IPAddresses = %v, want [127.0.0.1 ::1]", leaf.Cert.IPAddresses)
	}
	if leaf.Cert.IsCA || leaf.Cert.Subject.CommonName != "svc.ns.svc" {
		t.Errorf("IsCA=%v CN=%q, want a leaf named svc.ns.svc", leaf.Cert.IsCA, leaf.Cert.Subject.CommonName)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, name := range []string{"svc.ns.svc", "svc.ns.svc.cluster.local", "127.0.0.1", "::1"} {
		_, err := leaf.Cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if !certs.SignedBy(leaf.Cert, []*x509.Certificate{ca.Cert}) {
		t.Error("SignedBy(leaf, CA) = false")
	}
	if certs.SignedBy(leaf.Cert, []*x509.Certificate{newCA(t, t0, time.Hour).Cert}) {
		t.Error("SignedBy(leaf, other CA) = true")
	}

	// A leaf never outlives its CA.
	short := newCA(t, t0, 10*24*time.Hour)
	if got := issue(t, short, names, t0, certs.DefaultLeafLifetime).Cert.NotAfter; !got.Equal(short.Cert.NotAfter) {
		t.Errorf("leaf of a 10-day CA expires %s, want the CA's expiry %s", got, short.Cert.NotAfter)
	}

	for name, bad := range map[string][]string{"no names": nil, "empty name": {"a", ""}} {
		if _, err := certs.Issue(ca, bad, t0, time.Hour); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := certs.Issue(nil, names, t0, time.Hour); err == nil {
		t.Error("no CA: no error")
	}
}

func TestParsePair(t *testing.T) {
	ca := newCA(t, t0, time.Hour)
	leaf := issue(t, ca, []string{"a.b.svc"}, t0, time.Hour)
	got, err := certs.ParsePair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Cert.Equal(leaf.Cert) {
		t.Error("parsed certificate differs")
	}
	if _, err := certs.ParsePair(leaf.CertPEM, ca.KeyPEM); err == nil {
		t.Error("certificate with someone else's key: no error")
	}
	if _, err := certs.ParsePair([]byte("junk"), leaf.KeyPEM); err == nil {
		t.Error("junk certificate: no error")
	}
	bundle, err := certs.ParseCertificates(append(append([]byte{}, ca.CertPEM...), leaf.CertPEM...))
	if err != nil || len(bundle) != 2 {
		t.Fatalf("ParseCertificates = %d certificates, %v; want 2", len(bundle), err)
	}
	if _, err := certs.ParseCertificates(leaf.KeyPEM); err == nil {
		t.Error("bundle without certificates: no error")
	}
}

// TestNeedsRotation walks a two-minute certificate through its life.
func TestNeedsRotation(t *testing.T) {
	ca := newCA(t, t0, time.Hour)
	names := []string{"svc.ns.svc", "svc.ns.svc.cluster.local", "10.0.0.1"}
	leaf := issue(t, ca, names, t0, 2*time.Minute).Cert
	// Valid from t0-6s (a twentieth of the lifetime) to t0+2m: 126 s, so
	// the last third (42 s) starts at t0+78s.
	renew := certs.RenewAt(leaf, certs.DefaultRenewWindow)
	if want := t0.Add(78 * time.Second); !renew.Equal(want) {
		t.Fatalf("RenewAt = %s, want %s", renew, want)
	}
	if !renew.Before(leaf.NotAfter) {
		t.Fatalf("renewal at %s is not before expiry %s", renew, leaf.NotAfter)
	}
	tests := []struct {
		name  string
		cert  *x509.Certificate
		names []string
		now   time.Time
		want  string
	}{
		{"fresh", leaf, names, t0, ""},
		{"names in another order, case and duplicated", leaf, []string{"10.0.0.1", "SVC.ns.svc.cluster.local", "svc.ns.svc", "svc.ns.svc"}, t0, ""},
		{"just before the window", leaf, names, renew.Add(-time.Nanosecond), ""},
		{"window opens", leaf, names, renew, certs.ReasonExpiring},
		{"expired", leaf, names, leaf.NotAfter.Add(time.Second), certs.ReasonExpiring},
		{"not yet valid", leaf, names, leaf.NotBefore.Add(-time.Second), certs.ReasonNotYetValid},
		{"name added", leaf, append([]string{"extra.ns.svc"}, names...), t0, certs.ReasonNames},
		{"name removed", leaf, names[1:], t0, certs.ReasonNames},
		{"IP changed", leaf, []string{"svc.ns.svc", "svc.ns.svc.cluster.local", "10.0.0.2"}, t0, certs.ReasonNames},
		{"missing", nil, names, t0, certs.ReasonMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rotate, why := certs.NeedsRotation(tt.cert, tt.names, tt.now, certs.DefaultRenewWindow)
			if rotate != (tt.want != "") || why != tt.want {
				t.Errorf("NeedsRotation = %v %q, want %v %q", rotate, why, tt.want != "", tt.want)
			}
		})
	}
}

func TestLifetimesDefaults(t *testing.T) {
	got := certs.Lifetimes{RenewWindow: 1.5}.WithDefaults()
	want := certs.Lifetimes{CA: certs.DefaultCALifetime, Leaf: certs.DefaultLeafLifetime, RenewWindow: certs.DefaultRenewWindow}
	if got != want {
		t.Errorf("WithDefaults = %+v, want %+v", got, want)
	}
	custom := certs.Lifetimes{CA: time.Hour, Leaf: time.Minute, RenewWindow: 0.5}
	if got := custom.WithDefaults(); got != custom {
		t.Errorf("WithDefaults changed set fields: %+v", got)
	}
}
