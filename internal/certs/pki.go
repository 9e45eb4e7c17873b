package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"
)

// Lifetimes says how long certificates live and when they are renewed.
// The zero value means the defaults.
type Lifetimes struct {
	// CA is the validity of a certificate authority. Default: 365 days.
	CA time.Duration
	// Leaf is the validity of a serving certificate. Default: 90 days.
	// A leaf never outlives the CA that signed it.
	Leaf time.Duration
	// RenewWindow is the fraction of a certificate's lifetime, counted back
	// from its expiry, in which it is renewed. Default: 1/3, so a 90-day
	// leaf is renewed 30 days before it expires.
	RenewWindow float64
}

// Default lifetimes.
const (
	DefaultCALifetime   = 365 * 24 * time.Hour
	DefaultLeafLifetime = 90 * 24 * time.Hour
	DefaultRenewWindow  = 1.0 / 3
)

// maxBackdate caps how far before issuance a certificate becomes valid, to
// absorb clock skew between the controller's replicas and the API server.
const maxBackdate = 5 * time.Minute

// WithDefaults fills the unset fields.
func (l Lifetimes) WithDefaults() Lifetimes {
	if l.CA <= 0 {
		l.CA = DefaultCALifetime
	}
	if l.Leaf <= 0 {
		l.Leaf = DefaultLeafLifetime
	}
	if l.RenewWindow <= 0 || l.RenewWindow >= 1 {
		l.RenewWindow = DefaultRenewWindow
	}
	return l
}

// KeyPair is a parsed certificate with its private key and their PEM forms.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA makes a self-signed certificate authority with a new ECDSA P-256
// key, valid from shortly before now for lifetime.
func NewCA(commonName string, now time.Time, lifetime time.Duration) (*KeyPair, error) {
	if lifetime <= 0 {
		return nil, fmt.Errorf("CA %q: lifetime %s is not positive", commonName, lifetime)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA %q: generate key: %w", commonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, fmt.Errorf("CA %q: %w", commonName, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"odh-serving"}},
		NotBefore:             now.Add(-backdate(lifetime)),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, tmpl, key, key)
}

// Issue makes a serving certificate for names with a new ECDSA P-256 key,
// signed by ca. A name that parses as an IP address becomes an IP SAN, every
// other name a DNS SAN; the first DNS name (else the first IP) is the common
// name. The certificate is valid from shortly before now for lifetime, but
// never past the CA's expiry.
func Issue(ca *KeyPair, names []string, now time.Time, lifetime time.Duration) (*KeyPair, error) {
	dns, ips, err := splitNames(names)
	if err != nil {
		return nil, fmt.Errorf("issue serving certificate: %w", err)
	}
	cn := ""
	if len(dns) > 0 {
		cn = dns[0]
	} else {
		cn = ips[0].String()
	}
	return issue(ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dns,
		IPAddresses: ips,
	}, "serving certificate for "+strings.Join(names, ", "), now, lifetime)
}

// IssueClient makes a client certificate for commonName with a new ECDSA
// P-256 key, signed by ca, valid as Issue's: for a front proxy, whose
// client certificate an aggregated API server trusts.
func IssueClient(ca *KeyPair, commonName string, now time.Time, lifetime time.Duration) (*KeyPair, error) {
	return issue(ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, "client certificate for "+commonName, now, lifetime)
}

// issue signs tmpl (subject, usage and names set) with ca and a new key.
func issue(ca *KeyPair, tmpl *x509.Certificate, what string, now time.Time, lifetime time.Duration) (*KeyPair, error) {
	if ca == nil || ca.Cert == nil || ca.Key == nil {
		return nil, fmt.Errorf("issue %s: no CA", what)
	}
	if lifetime <= 0 {
		return nil, fmt.Errorf("issue %s: lifetime %s is not positive", what, lifetime)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("issue %s: generate key: %w", what, err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, fmt.Errorf("issue %s: %w", what, err)
	}
	tmpl.NotBefore = now.Add(-backdate(lifetime))
	tmpl.NotAfter = now.Add(lifetime)
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	return sign(tmpl, ca.Cert, key, ca.Key)
}

// ParsePair parses a PEM certificate (the first block is the leaf) and its
// PEM private key and checks that they belong together.
func ParsePair(certPEM, keyPEM []byte) (*KeyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parse certificate and key: %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("parse certificate and key: key type %T cannot sign", pair.PrivateKey)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
	}
	return &KeyPair{Cert: leaf, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ParseCertificates parses every CERTIFICATE block of a PEM bundle.
func ParseCertificates(bundle []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate %d of the bundle: %w", len(out)+1, err)
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, errors.New("parse bundle: no certificate found")
	}
	return out, nil
}

// Reasons for a rotation, as NeedsRotation returns them.
const (
	ReasonMissing     = "missing"
	ReasonNotYetValid = "not yet valid"
	ReasonExpiring    = "expires within the renewal window"
	ReasonNames       = "names differ"
)

// NeedsRotation reports whether cert must be replaced, and why: it is
// missing, not yet valid at now, within window (a fraction of its lifetime)
// of its expiry, or its SANs are not exactly names (DNS names compared case
// insensitively, IP addresses by value, order and duplicates ignored).
func NeedsRotation(cert *x509.Certificate, names []string, now time.Time, window float64) (bool, string) {
	switch {
	case cert == nil:
		return true, ReasonMissing
	case now.Before(cert.NotBefore):
		return true, ReasonNotYetValid
	case !now.Before(RenewAt(cert, window)):
		return true, ReasonExpiring
	case !sameNames(cert, names):
		return true, ReasonNames
	}
	return false, ""
}

// RenewAt is when cert enters its renewal window: window (a fraction) of its
// lifetime before it expires.
func RenewAt(cert *x509.Certificate, window float64) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotAfter.Add(-time.Duration(float64(life) * window))
}

// SignedBy reports whether leaf carries a valid signature of one of cas.
func SignedBy(leaf *x509.Certificate, cas []*x509.Certificate) bool {
	for _, ca := range cas {
		if !bytes.Equal(leaf.RawIssuer, ca.RawSubject) {
			continue
		}
		if leaf.CheckSignatureFrom(ca) == nil {
			return true
		}
	}
	return false
}

func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (*KeyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("sign certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse new certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key of %q: %w", tmpl.Subject.CommonName, err)
	}
	return &KeyPair{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// backdate is how long before issuance a certificate becomes valid: a
// twentieth of its lifetime, at most maxBackdate.
func backdate(lifetime time.Duration) time.Duration {
	return min(lifetime/20, maxBackdate)
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return serial, nil
}

// splitNames sorts names into DNS names (lower case) and IP addresses,
// dropping duplicates but keeping the first-seen order.
func splitNames(names []string) ([]string, []net.IP, error) {
	var dns []string
	var ips []net.IP
	for _, n := range names {
		if n == "" {
			return nil, nil, errors.New("empty name")
		}
		if ip := net.ParseIP(n); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		n = strings.ToLower(n)
		if !slices.Contains(dns, n) {
			dns = append(dns, n)
		}
	}
	if len(dns) == 0 && len(ips) == 0 {
		return nil, nil, errors.New("no names")
	}
	return dns, ips, nil
}

func sameNames(cert *x509.Certificate, names []string) bool {
	var wantDNS, wantIP []string
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			wantIP = append(wantIP, ip.String())
		} else {
			wantDNS = append(wantDNS, strings.ToLower(n))
		}
	}
	gotDNS := make([]string, 0, len(cert.DNSNames))
	for _, n := range cert.DNSNames {
		gotDNS = append(gotDNS, strings.ToLower(n))
	}
	gotIP := make([]string, 0, len(cert.IPAddresses))
	for _, ip := range cert.IPAddresses {
		gotIP = append(gotIP, ip.String())
	}
	return sameSet(wantDNS, gotDNS) && sameSet(wantIP, gotIP)
}

func sameSet(a, b []string) bool {
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
