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

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/migration"
)

// migrationInput reads the live route (the managed one, or the user's in
// route.http.refs) and pools: what internal/migration decides the service's
// phase from.
func (r *Reconciler) migrationInput(ctx context.Context, p *pass) (migration.Input, error) {
	ns := p.svc.Namespace
	in := migration.Input{
		Service: p.svc, Now: p.now, Grace: r.opts.MigrationGracePeriod,
		V1Served: r.kinds.hasCRD(crdPoolV1), Alpha2Served: r.kinds.hasCRD(crdPoolV1alpha2),
	}
	pool := p.plan.Names.Pool
	in.Pool = pool
	if r.kinds.hasCRD(crdHTTPRoute) {
		if refs := routeRefs(p.plan.Shape); len(refs) > 0 {
			// The user's routes: the move follows their backendRefs.
			for _, name := range refs {
				ref := migration.RouteRef{Name: name}
				rt := &gatewayv1.HTTPRoute{}
				if found, err := r.getOptional(ctx, types.NamespacedName{Namespace: ns, Name: name}, rt); err != nil {
					return in, err
				} else if found {
					ref.Route = rt
				}
				in.RouteRefs = append(in.RouteRefs, ref)
			}
		} else {
			rt := &gatewayv1.HTTPRoute{}
			if found, err := r.getOptional(ctx, types.NamespacedName{Namespace: ns, Name: p.plan.Names.Route}, rt); err != nil {
				return in, err
			} else if found {
				in.Route = rt
			}
		}
	}
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

// routeRefs names the user's routes, spec.router.route.http.refs.
func routeRefs(spec *v1alpha2.LLMInferenceServiceSpec) []string {
	if spec == nil || spec.Router == nil || spec.Router.Route == nil || spec.Router.Route.HTTP == nil {
		return nil
	}
	names := make([]string, 0, len(spec.Router.Route.HTTP.Refs))
	for _, ref := range spec.Router.Route.HTTP.Refs {
		names = append(names, ref.Name)
	}
	return names
}
