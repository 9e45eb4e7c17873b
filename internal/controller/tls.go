package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
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
