package controller

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/certs"
)

// ensureTLS keeps the self-signed serving secret the presets mount, with
// every Service of the service among its names, and deletes it when the
// service has no Services (stopped) or another certificate mode is on
// (while the controller makes any Secret: else it may not touch them).
func (r *Reconciler) ensureTLS(ctx context.Context, p *pass) (time.Duration, error) {
	if !r.makesSecrets() {
		return 0, nil
	}
	key := types.NamespacedName{Namespace: p.svc.Namespace, Name: p.plan.Names.TLSSecret}
	dnsNames := serviceNames(p)
	if r.authority == nil || len(dnsNames) == 0 {
		return 0, r.deleteOwnedSecret(ctx, p.svc, key)
	}
	owner := ownerReference(p.svc)
	res, err := r.authority.EnsureServingSecret(ctx, r.client, key, dnsNames, &owner, p.now)
	if err != nil {
		return 0, fmt.Errorf("serving certificate secret %s: %w", key, err)
	}
	return res.RequeueAfter(p.now), nil
}

// serviceNames are the DNS names of every Service the service renders, for
// the serving certificate, with localhost for probes and sidecars.
func serviceNames(p *pass) []string {
	var names []string
	for _, u := range p.children {
		if u.GroupVersionKind() != gvkService {
			continue
		}
		n, ns := u.GetName(), u.GetNamespace()
		names = append(names, n, n+"."+ns, n+"."+ns+".svc", n+"."+ns+".svc.cluster.local")
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return append([]string{"localhost", "127.0.0.1"}, slices.Compact(names)...)
}

func (r *Reconciler) deleteOwnedSecret(ctx context.Context, svc *v1alpha2.LLMInferenceService, key types.NamespacedName) error {
	k := kind{gvk: gvkSecret}
	s := k.newObject()
	if found, err := r.getOptional(ctx, key, s); err != nil || !found {
		return err
	}
	if !controls(svc, s, k) {
		return nil
	}
	return r.deleteChild(ctx, s, k)
}

// publishCA puts the CA bundle, in the self-signed mode, where the gateways
// read it: the Secret convention.CABundleName in the namespace of each
// Istio gateway the service's routes attach to (p.istioGateways: those
// that exist and are Istio's, whatever else a route names), for the
// DestinationRules' credentialName (Istio reads it from the proxy's
// namespace only), and the ConfigMap of that name in the service's
// namespace, for the BackendTLSPolicies. Both hold only the public CA
// certificate and are shared by every service there, so no service owns
// them and they stay. They are read from the API server at most every
// publishedCheck and written only when missing or when the CA changed; an
// object of the name that is not ours is never written (certs.ErrNotManaged).
func (r *Reconciler) publishCA(ctx context.Context, p *pass) error {
	if r.authority == nil {
		return nil
	}
	var secret, configMap bool
	for _, u := range p.children {
		switch u.GroupVersionKind() {
		case gvkDestinationRule:
			secret = true
		case gvkBackendTLSPolicy:
			configMap = true
		}
	}
	if !secret && !configMap {
		return nil
	}
	bundle, err := r.authority.Bundle(ctx, r.client, p.now)
	if err != nil {
		return fmt.Errorf("CA bundle for the gateways: %w", err)
	}
	if configMap {
		if err := r.putCA(ctx, &corev1.ConfigMap{}, p.svc.Namespace, bundle, p.now); err != nil {
			return err
		}
	}
	if !secret {
		return nil
	}
	var namespaces []string
	for _, g := range p.istioGateways {
		if !slices.Contains(namespaces, g.Namespace) {
			namespaces = append(namespaces, g.Namespace)
		}
	}
	for _, ns := range namespaces {
		if !r.caches(ns) {
			continue // a gateway outside the namespaces it may write: docs/tls.md
		}
		if err := r.putCA(ctx, &corev1.Secret{}, ns, bundle, p.now); err != nil {
			return err
		}
	}
	return nil
}

// putCA publishes bundle in obj (an empty Secret or ConfigMap) in
// namespace, unless publishedCA knows it there; certs.PublishBundle says
// how. It reads through the API reader: the cache holds only Secrets
// labelled ours and no ConfigMap of the name, and an object of the name
// that is not ours must be seen to be left alone.
func (r *Reconciler) putCA(ctx context.Context, obj client.Object, namespace string, bundle []byte, now time.Time) error {
	at := publishedAt{kind: fmt.Sprintf("%T", obj), namespace: namespace}
	if r.published.fresh(at, bundle, now) {
		return nil
	}
	if err := certs.PublishBundle(ctx, r.apiReader, r.client, obj, namespace, bundle); err != nil {
		return err
	}
	r.published.record(at, bundle, now)
	return nil
}

// caches reports whether the controller caches, and may write, namespace.
func (r *Reconciler) caches(namespace string) bool {
	o := r.opts
	return len(o.WatchNamespaces) == 0 || slices.Contains(o.WatchNamespaces, namespace) ||
		namespace == o.SystemNamespace || namespace == o.IngressGatewayNamespace || namespace == o.InternalGatewayNamespace
}

// publishedCA remembers, by kind and namespace, the CA bundle a Secret or
// ConfigMap was last seen or written with, so a steady state reads it from
// the API server only every publishedCheck, and a bundle deleted by hand
// comes back by then.
type publishedCA struct {
	mu   sync.Mutex
	seen map[publishedAt]publishedBundle
}

type publishedAt struct {
	kind, namespace string
}

type publishedBundle struct {
	sum [sha256.Size]byte
	at  time.Time
}

// publishedCheck is how long a Secret or ConfigMap known to hold the
// bundle is not read again.
const publishedCheck = 10 * time.Minute

func (c *publishedCA) fresh(at publishedAt, bundle []byte, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.seen[at]
	return ok && b.sum == sha256.Sum256(bundle) && now.Sub(b.at) < publishedCheck
}

func (c *publishedCA) record(at publishedAt, bundle []byte, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[publishedAt]publishedBundle{}
	}
	c.seen[at] = publishedBundle{sum: sha256.Sum256(bundle), at: now}
}
