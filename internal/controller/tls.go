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
// service has no Services (stopped) or another certificate mode is on.
func (r *Reconciler) ensureTLS(ctx context.Context, p *pass) (time.Duration, error) {
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
// gateway the service's routes attach to, for the DestinationRules'
// credentialName (Istio reads it from the proxy's namespace only), and the
// ConfigMap of that name in the service's namespace, for the
// BackendTLSPolicies. Both hold only the public CA certificate and are
// shared by every service there, so no service owns them and they stay.
// They are written only when missing or when the CA changed.
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
	if configMap && !r.published.fresh(p.svc.Namespace, bundle, p.now) {
		if err := r.putCA(ctx, &corev1.ConfigMap{}, p.svc.Namespace, bundle); err != nil {
			return err
		}
		r.published.record(p.svc.Namespace, bundle, p.now)
	}
	if !secret {
		return nil
	}
	parents, err := r.routeParents(ctx, p)
	if err != nil {
		return err
	}
	var namespaces []string
	for _, g := range parents {
		if !slices.Contains(namespaces, g.Namespace) {
			namespaces = append(namespaces, g.Namespace)
		}
	}
	for _, ns := range namespaces {
		if !r.caches(ns) {
			continue // a gateway outside the namespaces it may write: docs/tls.md
		}
		if err := r.putCA(ctx, &corev1.Secret{}, ns, bundle); err != nil {
			return err
		}
	}
	return nil
}

// putCA publishes bundle in obj (an empty Secret or ConfigMap) in
// namespace; certs.PublishBundle says where.
func (r *Reconciler) putCA(ctx context.Context, obj client.Object, namespace string, bundle []byte) error {
	// The cache holds Secrets labelled managed-by, not ConfigMaps: those
	// are read from the API server, when publishedCA does not know them.
	var reader client.Reader = r.client
	if _, ok := obj.(*corev1.ConfigMap); ok {
		reader = r.apiReader
	}
	return certs.PublishBundle(ctx, reader, r.client, obj, namespace, bundle)
}

// caches reports whether the controller caches, and may write, namespace.
func (r *Reconciler) caches(namespace string) bool {
	o := r.opts
	return len(o.WatchNamespaces) == 0 || slices.Contains(o.WatchNamespaces, namespace) ||
		namespace == o.SystemNamespace || namespace == o.IngressGatewayNamespace || namespace == o.InternalGatewayNamespace
}

// publishedCA remembers, by namespace, the CA bundle a ConfigMap was last
// seen or written with, so a steady state reads it from the API server only
// every publishedCheck, and a bundle deleted by hand comes back by then.
type publishedCA struct {
	mu   sync.Mutex
	seen map[string]publishedBundle
}

type publishedBundle struct {
	sum [sha256.Size]byte
	at  time.Time
}

// publishedCheck is how long a ConfigMap known to hold the bundle is not
// read again.
const publishedCheck = 10 * time.Minute

func (c *publishedCA) fresh(namespace string, bundle []byte, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.seen[namespace]
	return ok && b.sum == sha256.Sum256(bundle) && now.Sub(b.at) < publishedCheck
}

func (c *publishedCA) record(namespace string, bundle []byte, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]publishedBundle{}
	}
	c.seen[namespace] = publishedBundle{sum: sha256.Sum256(bundle), at: now}
}
