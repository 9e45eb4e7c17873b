package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/internal/migration"
)

// migrationInput reads the live route and pools: what internal/migration
// decides the service's phase from.
func (r *Reconciler) migrationInput(ctx context.Context, p *pass) (migration.Input, error) {
	ns := p.svc.Namespace
	in := migration.Input{
		Service: p.svc, Now: p.now, Grace: r.opts.MigrationGracePeriod,
		V1Served: r.kinds.hasCRD(crdPoolV1), Alpha2Served: r.kinds.hasCRD(crdPoolV1alpha2),
	}
	if r.kinds.hasCRD(crdHTTPRoute) {
		rt := &gatewayv1.HTTPRoute{}
		if found, err := r.getOptional(ctx, types.NamespacedName{Namespace: ns, Name: p.plan.Names.Route}, rt); err != nil {
			return in, err
		} else if found {
			in.Route = rt
		}
	}
	pool := p.plan.Names.Pool
	if in.V1Served {
		v1 := &gieapiv1.InferencePool{}
		if found, err := r.getOptional(ctx, types.NamespacedName{Namespace: ns, Name: pool}, v1); err != nil {
			return in, err
		} else if found {
			in.PoolV1 = v1
		}
	}
	if in.Alpha2Served {
		a2 := &gieapixv1alpha2.InferencePool{}
		if found, err := r.getOptional(ctx, types.NamespacedName{Namespace: ns, Name: pool}, a2); err != nil {
			return in, err
		} else if found {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a2)
			if err != nil {
				return in, fmt.Errorf("convert InferencePool %s/%s: %w", ns, pool, err)
			}
			in.PoolAlpha2 = &unstructured.Unstructured{Object: m}
			in.PoolAlpha2.SetGroupVersionKind(gvkPoolV1alpha2)
		}
	}
	return in, nil
}

// redecide explains the phase again once this pass created the route, so
// the status does not say the route is missing. The phase stays the one the
// route was rendered with.
func (r *Reconciler) redecide(p *pass, in migration.Input) {
	if in.Route != nil {
		return
	}
	u, ok := p.applied[childID{gvk: gvkHTTPRoute, name: p.plan.Names.Route}]
	if !ok {
		return
	}
	in.Route = &gatewayv1.HTTPRoute{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, in.Route); err != nil {
		return
	}
	if d := migration.Decide(in); d.Phase == p.decision.Phase {
		p.decision = d
	}
}
