package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/internal/migration"
)

// moveWeights is the static mode's only write: the route Helm made gets the
// weights of the phase.
func (r *Reconciler) moveWeights(ctx context.Context, p *pass) error {
	if !r.kinds.hasCRD(crdHTTPRoute) {
		return nil
	}
	rt := &gatewayv1.HTTPRoute{}
	found, err := r.getOptional(ctx, types.NamespacedName{Namespace: p.svc.Namespace, Name: p.plan.Names.Route}, rt)
	if err != nil || !found {
		return err
	}
	if _, err := migration.ApplyWeights(ctx, r.client, rt, p.decision.Phase); err != nil {
		p.failed(false, err)
		return err
	}
	return nil
}
