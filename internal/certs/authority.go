package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Names and labels of what this package writes.
const (
	// CASecretName is the default name of the shared CA secret in the
	// system namespace.
	CASecretName = "odh-serving-self-signed-ca" //nolint:gosec // a Secret's name, not a credential
	// CACommonName is the subject of the CAs this package makes.
	CACommonName = "odh-serving self-signed CA"

	// InjectorFieldManager writes the caBundle fields of the webhook
	// configuration and the CRDs, so managedFields show who owns them.
	InjectorFieldManager = "odh-serving-certs"

	// Keys of a serving secret (kubernetes.io/tls plus the CA bundle).
	KeyCert   = corev1.TLSCertKey
	KeyKey    = corev1.TLSPrivateKeyKey
	KeyBundle = "ca.crt"
)

// caRefresh is how often a loaded CA is read again, to pick up a CA that
// another replica rotated or an administrator replaced.
const caRefresh = 5 * time.Minute

// Authority is the one self-signed CA that signs every serving certificate
// of the controller: the per-service secrets and the webhook's. It lives in
// a secret (kubernetes.io/tls; ca.crt holds the bundle clients should trust)
// in the system namespace, is created once and kept in memory, so the
// steady state reads no CA and generates no key. Share one Authority
// between the reconciler and WebhookCerts; it is safe for concurrent use.
//
// An administrator may put their own CA (any key type) into the secret; it
// is used as it is until it enters its renewal window, when a new ECDSA
// P-256 CA replaces it. On rotation the bundle keeps the previous CA, so
// certificates it signed stay trusted until they are reissued.
type Authority struct {
	// Secret names the CA secret. Required.
	Secret types.NamespacedName
	// Reader reads the CA secret (once, then every five minutes). Nil means
	// the client passed to each call. Pass the manager's API reader
	// (mgr.GetAPIReader()) unless the cache holds every secret of the system
	// namespace: a cache limited to other namespaces, or to labelled
	// secrets, would not see an administrator's CA secret.
	Reader client.Reader
	// Lifetimes of the CA and the leaves; zero fields mean the defaults.
	Lifetimes Lifetimes

	mu       sync.Mutex
	state    *caState
	loadedAt time.Time

	// checked remembers the secrets whose pair was parsed and verified, by
	// resourceVersion, so a steady-state call does no cryptography.
	checkedMu sync.Mutex
	checked   map[types.NamespacedName]checkedLeaf
}

// checkedLeaf is what a verified secret's certificate needs for the next
// check: its validity and names, verified against the CA snapshot ca. It
// keeps copies of those fields, not the parsed certificate: a parsed
// certificate is a kilobyte of struct, and its IP addresses point into its
// DER, which they would keep too (one per serving secret, thousands).
type checkedLeaf struct {
	uid                 types.UID
	resourceVersion     string
	ca                  *caState
	notBefore, notAfter time.Time
	dnsNames            []string
	ipAddresses         []net.IP
}

// check is NeedsRotation for the remembered certificate; it also returns
// when the certificate enters its renewal window.
func (c *checkedLeaf) check(names []string, now time.Time, window float64) (renewAt time.Time, rotate bool) {
	cert := x509.Certificate{NotBefore: c.notBefore, NotAfter: c.notAfter, DNSNames: c.dnsNames, IPAddresses: c.ipAddresses}
	rotate, _ = NeedsRotation(&cert, names, now, window)
	return RenewAt(&cert, window), rotate
}

// maxChecked bounds the memo; past it, it starts again empty.
const maxChecked = 10000

// caState is an immutable snapshot of the CA.
type caState struct {
	ca         *KeyPair
	bundle     []byte
	bundleCert []*x509.Certificate
}

// Result says what an ensure call did and when to call it again.
type Result struct {
	// Changed is true when something was written.
	Changed bool
	// RenewAt is when the certificate, or the CA that signed it, enters its
	// renewal window: call again by then.
	RenewAt time.Time
}

// RequeueAfter is how long after now to call again; at least a second.
func (r Result) RequeueAfter(now time.Time) time.Duration {
	return max(r.RenewAt.Sub(now), time.Second)
}

// Bundle returns the PEM CA bundle clients should trust, loading or making
// the CA first if needed.
func (a *Authority) Bundle(ctx context.Context, c client.Client, now time.Time) ([]byte, error) {
	st, err := a.current(ctx, a.reader(c), c, now)
	if err != nil {
		return nil, err
	}
	return st.bundle, nil
}

// ErrNotManaged says an object holds a name this package writes, without
// the label convention.LabelManagedBy=convention.ManagedBy: it is someone
// else's, and is neither read for its data nor written.
var ErrNotManaged = errors.New("exists and is not managed by " + convention.ManagedBy)

// PublishBundle puts the public CA bundle where a gateway reads it: under
// convention.CABundleKey in obj (an empty *corev1.Secret or
// *corev1.ConfigMap) named convention.CABundleName in namespace. It reads
// the object through r, which must see every object of the kind (the API
// reader, not a cache limited to our label), and writes it with c only
// when it is missing (create) or ours and holding another bundle (a merge
// patch on the resourceVersion read, so an object replaced in between is
// not written). An object of that name without our managed-by label is
// someone else's: it is left alone, and the error wraps ErrNotManaged.
func PublishBundle(ctx context.Context, r client.Reader, c client.Client, obj client.Object, namespace string, bundle []byte) error {
	key := types.NamespacedName{Namespace: namespace, Name: convention.CABundleName}
	var kind string
	switch obj.(type) {
	case *corev1.Secret:
		kind = "Secret"
	case *corev1.ConfigMap:
		kind = "ConfigMap"
	default:
		return fmt.Errorf("CA bundle %s: a %T cannot hold it, only a Secret or a ConfigMap", key, obj)
	}
	err := r.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		meta := metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{convention.LabelManagedBy: convention.ManagedBy}}
		var desired client.Object = &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{convention.CABundleKey: string(bundle)}}
		if kind == "Secret" {
			desired = &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{convention.CABundleKey: bundle}}
		}
		if err := c.Create(ctx, desired, client.FieldOwner(convention.FieldManager)); err != nil {
			return fmt.Errorf("create the CA bundle %s %s: %w", kind, key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get the CA bundle %s %s: %w", kind, key, err)
	}
	if obj.GetLabels()[convention.LabelManagedBy] != convention.ManagedBy {
		return fmt.Errorf("the CA bundle %s %s %w (label %s); rename or delete it, it is not written over",
			kind, key, ErrNotManaged, convention.LabelManagedBy)
	}
	base := obj.DeepCopyObject().(client.Object)
	switch o := obj.(type) {
	case *corev1.Secret:
		if bytes.Equal(o.Data[convention.CABundleKey], bundle) {
			return nil
		}
		if o.Data == nil {
			o.Data = map[string][]byte{}
		}
		o.Data[convention.CABundleKey] = bundle
	case *corev1.ConfigMap:
		if o.Data[convention.CABundleKey] == string(bundle) {
			return nil
		}
		if o.Data == nil {
			o.Data = map[string]string{}
		}
		o.Data[convention.CABundleKey] = string(bundle)
	}
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := c.Patch(ctx, obj, patch, client.FieldOwner(convention.FieldManager)); err != nil {
		return fmt.Errorf("write the CA bundle %s %s: %w", kind, key, err)
	}
	return nil
}

// EnsureServingSecret keeps the secret key holding a serving certificate for
// dnsNames (IP addresses allowed) signed by the CA: type kubernetes.io/tls
// with tls.crt, tls.key and ca.crt, labelled managed-by odh-serving and,
// when owner is not nil, owned by it (set whenever the secret is written;
// a valid secret is not written to add it). It reads through c (the controller's
// cached client is fine) and writes only when the secret is missing, its
// certificate needs rotation (see NeedsRotation), does not match its key or
// was not signed by the CA, or its ca.crt is not the current bundle; only
// the first cases generate a key. A secret of that name that was not ours
// is taken over when it needs rotation; its type is kept (it is immutable).
// When c does not see a secret that exists, the create fails and the call
// reads it again through Reader, if set.
func (a *Authority) EnsureServingSecret(ctx context.Context, c client.Client, key types.NamespacedName, dnsNames []string, owner *metav1.OwnerReference, now time.Time) (Result, error) {
	st, err := a.current(ctx, a.reader(c), c, now)
	if err != nil {
		return Result{}, err
	}
	res, _, err := a.ensureLeaf(ctx, c, c, st, key, dnsNames, owner, now)
	if apierrors.IsAlreadyExists(err) && a.Reader != nil {
		// c did not see the secret (a stale cache, or one limited to our
		// labels and a secret made by someone else): read it directly.
		res, _, err = a.ensureLeaf(ctx, a.Reader, c, st, key, dnsNames, owner, now)
	}
	return res, err
}

func (a *Authority) reader(c client.Client) client.Reader {
	if a.Reader != nil {
		return a.Reader
	}
	return c
}

// ensureLeaf is EnsureServingSecret with the CA given; it also returns the
// secret as it is now.
func (a *Authority) ensureLeaf(ctx context.Context, r client.Reader, c client.Client, st *caState, key types.NamespacedName, names []string, owner *metav1.OwnerReference, now time.Time) (Result, *corev1.Secret, error) {
	if key.Name == "" || key.Namespace == "" {
		return Result{}, nil, fmt.Errorf("serving secret %q: namespace and name are required", key)
	}
	if len(names) == 0 {
		return Result{}, nil, fmt.Errorf("serving secret %s: no DNS names", key)
	}
	life := a.Lifetimes.WithDefaults()
	caRenew := RenewAt(st.ca.Cert, life.RenewWindow)

	live := &corev1.Secret{}
	err := r.Get(ctx, key, live)
	if err != nil && !apierrors.IsNotFound(err) {
		return Result{}, nil, fmt.Errorf("get serving secret %s: %w", key, err)
	}
	if err == nil {
		leafRenew, ok := a.validLeaf(live, names, st, now)
		if ok {
			res := Result{RenewAt: earliest(leafRenew, caRenew)}
			if bytes.Equal(live.Data[KeyBundle], st.bundle) {
				return res, live, nil
			}
			// Only the bundle is stale (the CA rotated): no new key.
			upd := live.DeepCopy()
			upd.Data[KeyBundle] = st.bundle
			if err := c.Update(ctx, upd, client.FieldOwner(convention.FieldManager)); err != nil {
				return Result{}, nil, fmt.Errorf("update CA bundle of serving secret %s: %w", key, err)
			}
			res.Changed = true
			return res, upd, nil
		}
	}

	pair, ierr := Issue(st.ca, names, now, life.Leaf)
	if ierr != nil {
		return Result{}, nil, fmt.Errorf("serving secret %s: %w", key, ierr)
	}
	res := Result{Changed: true, RenewAt: earliest(RenewAt(pair.Cert, life.RenewWindow), caRenew)}
	data := map[string][]byte{KeyCert: pair.CertPEM, KeyKey: pair.KeyPEM, KeyBundle: st.bundle}
	if apierrors.IsNotFound(err) {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{convention.LabelManagedBy: convention.ManagedBy}},
			Type:       corev1.SecretTypeTLS,
			Data:       data,
		}
		if owner != nil {
			s.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		if err := c.Create(ctx, s, client.FieldOwner(convention.FieldManager)); err != nil {
			return Result{}, nil, fmt.Errorf("create serving secret %s: %w", key, err)
		}
		return res, s, nil
	}
	upd := live.DeepCopy()
	if err := setOwner(upd, owner); err != nil {
		return Result{}, nil, fmt.Errorf("serving secret %s: %w", key, err)
	}
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	upd.Labels[convention.LabelManagedBy] = convention.ManagedBy
	if upd.Data == nil {
		upd.Data = map[string][]byte{}
	}
	for k, v := range data {
		upd.Data[k] = v
	}
	if err := c.Update(ctx, upd, client.FieldOwner(convention.FieldManager)); err != nil {
		return Result{}, nil, fmt.Errorf("rotate serving secret %s: %w", key, err)
	}
	return res, upd, nil
}

// validLeaf reports whether the secret's certificate can stay, and when it
// enters its renewal window. The parse, the key match and the signature
// check are remembered for the secret's resourceVersion and the CA
// snapshot; time and names are checked always.
func (a *Authority) validLeaf(s *corev1.Secret, names []string, st *caState, now time.Time) (time.Time, bool) {
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	window := a.Lifetimes.WithDefaults().RenewWindow
	a.checkedMu.Lock()
	c, ok := a.checked[key]
	a.checkedMu.Unlock()
	if !ok || c.uid != s.UID || c.resourceVersion != s.ResourceVersion || c.ca != st || s.ResourceVersion == "" {
		pair, err := ParsePair(s.Data[KeyCert], s.Data[KeyKey])
		if err != nil || !SignedBy(pair.Cert, st.bundleCert) {
			return time.Time{}, false
		}
		ips := make([]net.IP, len(pair.Cert.IPAddresses))
		for i, ip := range pair.Cert.IPAddresses {
			ips[i] = slices.Clone(ip)
		}
		c = checkedLeaf{
			uid: s.UID, resourceVersion: s.ResourceVersion, ca: st,
			notBefore: pair.Cert.NotBefore, notAfter: pair.Cert.NotAfter,
			dnsNames: slices.Clone(pair.Cert.DNSNames), ipAddresses: ips,
		}
		a.checkedMu.Lock()
		if a.checked == nil || len(a.checked) >= maxChecked {
			a.checked = map[types.NamespacedName]checkedLeaf{}
		}
		a.checked[key] = c
		a.checkedMu.Unlock()
	}
	renewAt, rotate := c.check(names, now, window)
	return renewAt, !rotate
}

// current returns the CA, reading it at most every caRefresh and creating or
// rotating it when needed.
func (a *Authority) current(ctx context.Context, r client.Reader, c client.Client, now time.Time) (*caState, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	life := a.Lifetimes.WithDefaults()
	if st := a.state; st != nil && now.Sub(a.loadedAt) < caRefresh && !a.loadedAt.After(now) &&
		now.Before(RenewAt(st.ca.Cert, life.RenewWindow)) {
		return st, nil
	}
	st, err := a.load(ctx, r, c, now)
	if err != nil {
		return nil, err
	}
	a.state, a.loadedAt = st, now
	return st, nil
}

func (a *Authority) load(ctx context.Context, r client.Reader, c client.Client, now time.Time) (*caState, error) {
	key := a.Secret
	if key.Name == "" || key.Namespace == "" {
		return nil, fmt.Errorf("CA secret %q: namespace and name are required", key)
	}
	life := a.Lifetimes.WithDefaults()
	// Two tries: a replica that loses a race to create or rotate reads the winner's CA.
	var lastErr error
	for range 2 {
		live := &corev1.Secret{}
		err := r.Get(ctx, key, live)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get CA secret %s: %w", key, err)
		}
		var prev *x509.Certificate
		if err == nil {
			st, perr := parseCA(live)
			if perr == nil {
				if rotate, _ := NeedsRotation(st.ca.Cert, nil, now, life.RenewWindow); !rotate {
					return st, nil
				}
				prev = st.ca.Cert
			}
		}
		ca, cerr := NewCA(CACommonName, now, life.CA)
		if cerr != nil {
			return nil, fmt.Errorf("CA secret %s: %w", key, cerr)
		}
		bundle := bytes.Clone(ca.CertPEM)
		if prev != nil && now.Before(prev.NotAfter) {
			bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: prev.Raw})...)
		}
		data := map[string][]byte{KeyCert: ca.CertPEM, KeyKey: ca.KeyPEM, KeyBundle: bundle}
		if apierrors.IsNotFound(err) {
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{convention.LabelManagedBy: convention.ManagedBy}},
				Type:       corev1.SecretTypeTLS,
				Data:       data,
			}
			err = c.Create(ctx, s, client.FieldOwner(convention.FieldManager))
		} else {
			upd := live.DeepCopy()
			if upd.Labels == nil {
				upd.Labels = map[string]string{}
			}
			upd.Labels[convention.LabelManagedBy] = convention.ManagedBy
			upd.Data = data
			err = c.Update(ctx, upd, client.FieldOwner(convention.FieldManager))
		}
		if err == nil {
			return stateOf(ca, bundle)
		}
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("write CA secret %s: %w", key, err)
		}
		lastErr = err
	}
	return nil, fmt.Errorf("write CA secret %s: lost the race twice: %w", key, lastErr)
}

// parseCA reads a CA secret; ca.crt defaults to tls.crt.
func parseCA(s *corev1.Secret) (*caState, error) {
	pair, err := ParsePair(s.Data[KeyCert], s.Data[KeyKey])
	if err != nil {
		return nil, err
	}
	if !pair.Cert.IsCA {
		return nil, errors.New("certificate is not a CA")
	}
	bundle := s.Data[KeyBundle]
	if len(bundle) == 0 {
		bundle = s.Data[KeyCert]
	}
	return stateOf(pair, bundle)
}

func stateOf(ca *KeyPair, bundle []byte) (*caState, error) {
	certs, err := ParseCertificates(bundle)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	if !containsCert(certs, ca.Cert) {
		return nil, errors.New("CA bundle does not hold the CA")
	}
	return &caState{ca: ca, bundle: bundle, bundleCert: certs}, nil
}

func containsCert(certs []*x509.Certificate, c *x509.Certificate) bool {
	for _, x := range certs {
		if x.Equal(c) {
			return true
		}
	}
	return false
}

// setOwner adds owner to the secret's owner references, refusing to take a
// secret another controller owns.
func setOwner(s *corev1.Secret, owner *metav1.OwnerReference) error {
	if owner == nil {
		return nil
	}
	for i, ref := range s.OwnerReferences {
		if ref.UID == owner.UID {
			s.OwnerReferences[i] = *owner
			return nil
		}
		if ref.Controller != nil && *ref.Controller && owner.Controller != nil && *owner.Controller {
			return fmt.Errorf("owned by %s %s, not by %s %s", ref.Kind, ref.Name, owner.Kind, owner.Name)
		}
	}
	s.OwnerReferences = append(s.OwnerReferences, *owner)
	return nil
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
