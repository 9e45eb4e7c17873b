package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/opendatahub-io/odh-serving/internal/webhook"
)

// WebhookSecretName is the default name of the webhook's serving secret.
const WebhookSecretName = "odh-serving-webhook-cert" //nolint:gosec // a Secret's name, not a credential

// DefaultCRDNames are the CRDs whose conversion webhook gets the CA bundle.
var DefaultCRDNames = []string{
	"llminferenceservices.serving.kserve.io",
	"llminferenceserviceconfigs.serving.kserve.io",
}

// Defaults of WebhookCerts.
const (
	DefaultCheckInterval = time.Minute
	retryInterval        = 10 * time.Second
)

// WebhookCerts keeps the webhook server's certificate valid in the
// self-signed mode. Ensure, called once before the webhook server starts,
// and then Start, as a manager.Runnable on every replica (no leader
// election: each replica serves the webhook), do the same four steps:
//
//  1. load (or make, or rotate) the shared CA;
//  2. put its bundle into every webhook of the ValidatingWebhookConfiguration
//     and into spec.conversion.webhook.clientConfig.caBundle of each CRD in
//     CRDNames that has a webhook conversion, patching only what differs;
//  3. keep the secret SecretName valid for the Service's names
//     (<svc>.<ns>.svc, <svc>.<ns>.svc.cluster.local, ExtraNames);
//  4. write its tls.crt and tls.key into CertDir when they differ from the
//     files there; controller-runtime's webhook server reloads them
//     (certwatcher: file events, and a poll every 10 s).
//
// The bundle is injected before the certificate is rotated, so the API
// server trusts a new CA before the webhook presents a certificate from it.
// A missing ValidatingWebhookConfiguration or CRD is skipped (a local run
// without them); any other error is returned by Ensure and retried by Start.
type WebhookCerts struct {
	// Client reads and writes the secrets, the webhook configuration and
	// the CRDs. Ensure runs before the manager's cache starts, so this must
	// be a client that reads from the API server (client.New). Its scheme
	// needs core, admissionregistration/v1 and apiextensions/v1.
	Client client.Client
	// Namespace is the system namespace, where the Service and the secret
	// live. Required.
	Namespace string
	// ServiceName is the webhook Service. Required.
	ServiceName string
	// ExtraNames are more SANs, e.g. "localhost" and "127.0.0.1" for a
	// webhook reached on the local machine.
	ExtraNames []string
	// CertDir is the webhook server's certificate folder. Required.
	CertDir string
	// CertName and KeyName are the file names in CertDir; default tls.crt
	// and tls.key, as controller-runtime's webhook server expects.
	CertName, KeyName string
	// SecretName is the webhook's serving secret; default
	// odh-serving-webhook-cert.
	SecretName string
	// ValidatingConfigName is the ValidatingWebhookConfiguration to inject
	// into; default odh-serving-validation.
	ValidatingConfigName string
	// MutatingConfigName is the MutatingWebhookConfiguration to inject into
	// as well (static mode's odh-serving-replicas); empty: none.
	MutatingConfigName string
	// CRDNames are the CRDs whose conversion webhook gets the bundle;
	// default DefaultCRDNames.
	CRDNames []string
	// CA signs the certificate; default an Authority on the secret
	// CASecretName in Namespace. Share it with the reconciler.
	CA *Authority
	// CheckInterval is how often Start checks everything again; default one
	// minute. It wakes earlier when a certificate is due for renewal.
	CheckInterval time.Duration
	// Clock defaults to the real clock.
	Clock clock.Clock

	once sync.Once
	ca   *Authority
}

var _ manager.Runnable = (*WebhookCerts)(nil)
var _ manager.LeaderElectionRunnable = (*WebhookCerts)(nil)

// Names are the SANs of the webhook certificate.
func (w *WebhookCerts) Names() []string {
	base := w.ServiceName + "." + w.Namespace + ".svc"
	return append([]string{base, base + ".cluster.local"}, w.ExtraNames...)
}

// Ensure makes the webhook certificate, its files and the CA bundle
// injection right, writing only what differs. When another replica wrote
// the same object first (a conflict), it reads the winner's and goes on.
func (w *WebhookCerts) Ensure(ctx context.Context) (Result, error) {
	if w.Client == nil || w.Namespace == "" || w.ServiceName == "" || w.CertDir == "" {
		return Result{}, errors.New("webhook certificates: Client, Namespace, ServiceName and CertDir are required")
	}
	var res Result
	var err error
	for range 3 {
		res, err = w.ensure(ctx)
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	return res, err
}

func (w *WebhookCerts) ensure(ctx context.Context) (Result, error) {
	now := w.clock().Now()
	ca := w.authority()
	st, err := ca.current(ctx, w.Client, w.Client, now)
	if err != nil {
		return Result{}, fmt.Errorf("webhook certificates: %w", err)
	}
	injected, err := w.inject(ctx, st.bundle)
	if err != nil {
		return Result{}, err
	}
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.secretName()}
	res, secret, err := ca.ensureLeaf(ctx, w.Client, w.Client, st, key, w.Names(), nil, now)
	if err != nil {
		return Result{}, fmt.Errorf("webhook certificates: %w", err)
	}
	wrote, err := w.writeFiles(secret.Data[KeyCert], secret.Data[KeyKey])
	if err != nil {
		return Result{}, err
	}
	res.Changed = res.Changed || injected || wrote
	return res, nil
}

// Start runs Ensure now, then every CheckInterval or when a certificate is
// due for renewal, whichever is sooner, until ctx ends. Errors are logged
// and retried after ten seconds; they never stop the manager.
func (w *WebhookCerts) Start(ctx context.Context) error {
	return keep(ctx, "webhook-certs", w.CheckInterval, w.clock(), w.Ensure)
}

// keep runs ensure now, then every interval (default
// DefaultCheckInterval) or when a certificate is due for renewal,
// whichever is sooner, until ctx ends. Errors are logged and retried after
// ten seconds; they never stop the manager.
func keep(ctx context.Context, name string, interval time.Duration, clk clock.Clock, ensure func(context.Context) (Result, error)) error {
	logger := log.FromContext(ctx).WithName(name)
	if interval <= 0 {
		interval = DefaultCheckInterval
	}
	for {
		res, err := ensure(ctx)
		wait := interval
		switch {
		case err != nil:
			logger.Error(err, "ensure certificates")
			wait = min(wait, retryInterval)
		default:
			if res.Changed {
				logger.Info("certificates updated", "renewAt", res.RenewAt)
			}
			wait = min(wait, res.RequeueAfter(clk.Now()))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-clk.After(wait):
		}
	}
}

// NeedLeaderElection is false: every replica serves the webhook and needs
// the files.
func (w *WebhookCerts) NeedLeaderElection() bool { return false }

func (w *WebhookCerts) inject(ctx context.Context, bundle []byte) (bool, error) {
	vwcName := w.ValidatingConfigName
	if vwcName == "" {
		vwcName = webhook.ValidatingConfigurationName
	}
	vwc := &admissionv1.ValidatingWebhookConfiguration{}
	changed, err := w.injectConfig(ctx, "ValidatingWebhookConfiguration", vwc, vwcName, func() []*admissionv1.WebhookClientConfig {
		out := make([]*admissionv1.WebhookClientConfig, len(vwc.Webhooks))
		for i := range vwc.Webhooks {
			out[i] = &vwc.Webhooks[i].ClientConfig
		}
		return out
	}, bundle)
	if err != nil {
		return false, err
	}
	if w.MutatingConfigName != "" {
		mwc := &admissionv1.MutatingWebhookConfiguration{}
		mutated, err := w.injectConfig(ctx, "MutatingWebhookConfiguration", mwc, w.MutatingConfigName, func() []*admissionv1.WebhookClientConfig {
			out := make([]*admissionv1.WebhookClientConfig, len(mwc.Webhooks))
			for i := range mwc.Webhooks {
				out[i] = &mwc.Webhooks[i].ClientConfig
			}
			return out
		}, bundle)
		if err != nil {
			return changed, err
		}
		changed = changed || mutated
	}
	names := w.CRDNames
	if names == nil {
		names = DefaultCRDNames
	}
	for _, name := range names {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := w.Client.Get(ctx, types.NamespacedName{Name: name}, crd)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return changed, fmt.Errorf("get CRD %s: %w", name, err)
		}
		conv := crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil ||
			bytes.Equal(conv.Webhook.ClientConfig.CABundle, bundle) {
			continue
		}
		orig := crd.DeepCopy()
		conv.Webhook.ClientConfig.CABundle = bundle
		if err := w.Client.Patch(ctx, crd, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(InjectorFieldManager)); err != nil {
			return changed, fmt.Errorf("inject CA bundle into the conversion webhook of CRD %s: %w", name, err)
		}
		changed = true
	}
	return changed, nil
}

// injectConfig puts bundle into every client config (configs, read after
// the Get) of the webhook configuration obj, of kind, named name, if it
// exists.
func (w *WebhookCerts) injectConfig(ctx context.Context, kind string, obj client.Object, name string, configs func() []*admissionv1.WebhookClientConfig, bundle []byte) (bool, error) {
	switch err := w.Client.Get(ctx, types.NamespacedName{Name: name}, obj); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get %s %s: %w", kind, name, err)
	}
	orig := obj.DeepCopyObject().(client.Object)
	changed := false
	for _, cc := range configs() {
		if !bytes.Equal(cc.CABundle, bundle) {
			cc.CABundle = bundle
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	if err := w.Client.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(InjectorFieldManager)); err != nil {
		return false, fmt.Errorf("inject CA bundle into %s %s: %w", kind, name, err)
	}
	return true, nil
}

// writeFiles writes the pair into CertDir where it differs, each file
// through a rename so the webhook server never reads half a file. The key
// goes first: a reader between the two renames sees a mismatched pair,
// which certwatcher rejects and keeps the old one until the second event.
func (w *WebhookCerts) writeFiles(certPEM, keyPEM []byte) (bool, error) {
	if err := os.MkdirAll(w.CertDir, 0o700); err != nil {
		return false, fmt.Errorf("webhook certificate folder %s: %w", w.CertDir, err)
	}
	certName, keyName := w.CertName, w.KeyName
	if certName == "" {
		certName = KeyCert
	}
	if keyName == "" {
		keyName = KeyKey
	}
	wrote := false
	for _, f := range []struct {
		name string
		data []byte
	}{{keyName, keyPEM}, {certName, certPEM}} {
		path := filepath.Join(w.CertDir, f.name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.data) {
			continue
		}
		if err := writeAtomic(path, f.data); err != nil {
			return wrote, fmt.Errorf("write webhook certificate file %s: %w", path, err)
		}
		wrote = true
	}
	return wrote, nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename; cleans up after a failure
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (w *WebhookCerts) authority() *Authority {
	w.once.Do(func() {
		w.ca = w.CA
		if w.ca == nil {
			w.ca = &Authority{Secret: types.NamespacedName{Namespace: w.Namespace, Name: CASecretName}}
		}
	})
	return w.ca
}

func (w *WebhookCerts) secretName() string {
	if w.SecretName == "" {
		return WebhookSecretName
	}
	return w.SecretName
}

func (w *WebhookCerts) clock() clock.Clock {
	if w.Clock == nil {
		return clock.RealClock{}
	}
	return w.Clock
}
