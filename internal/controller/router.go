package controller

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
)

// router sets the scheduler, pool, route and gateway conditions, the
// addresses, and RouterReady.
func (r *Reconciler) router(ctx context.Context, p *pass) error {
	ns := p.svc.Namespace
	var invalid []string

	// The endpoint picker.
	epp := &appsv1.Deployment{}
	if err := r.objectCondition(ctx, p, ConditionSchedulerWorkloadReady, p.res.Named(engine.RoleScheduler), epp, r.deploymentReadiness(ctx, epp)); err != nil {
		return err
	}
	if name := p.res.Named(engine.RoleScheduler); name != "" && p.status.Workloads != nil {
		p.status.Workloads.Scheduler = observedDeployment(name, epp)
	}

	// The pool: either group counts; a referenced pool counts alone.
	if hasScheduler(p.plan.Shape) {
		v, missing, err := r.poolVerdict(ctx, p)
		if err != nil {
			return err
		}
		if missing != "" {
			invalid = append(invalid, missing)
			v = notReady(ReasonRefsInvalid, "%s", missing)
		}
		if rp := p.res.PoolRef; rp != nil {
			// Say which groups the routes name the referenced pool in,
			// and whether that is assumed.
			v.message = strings.TrimPrefix(v.message+"; "+rp.String(), "; ")
		}
		p.conds.setBool(ConditionInferencePoolReady, v.ok, v.reason, v.message)
	} else {
		p.conds.remove(ConditionInferencePoolReady)
	}

	// Routes: the managed one, or the user's; none while auth cannot be
	// enforced.
	routes, missingRoutes, err := r.routes(ctx, p)
	if err != nil {
		return err
	}
	invalid = append(invalid, missingRoutes...)
	switch {
	case p.routeWithheld != "":
		p.conds.set(ConditionHTTPRoutesReady, metav1.ConditionFalse, p.routeWithheldReason, p.routeWithheld)
		p.conds.remove(ConditionGatewaysReady)
		p.status.Addresses, p.status.URL = nil, ""
	case len(routes) == 0 && len(missingRoutes) == 0:
		p.conds.remove(ConditionHTTPRoutesReady, ConditionGatewaysReady)
		p.status.Addresses = nil
		if svc := p.res.Named(engine.RoleWorkloadService); svc != "" {
			p.status.Addresses = []v1alpha2.Address{{Name: AddressInternal, URL: "https://" + svc + "." + ns + ".svc.cluster.local"}}
		}
		p.status.URL = primaryURL(p.status.Addresses)
	default:
		v := verdict{ok: true, reason: ReasonReady}
		for _, rt := range routes {
			if v = routeVerdict(rt, p.decision.Phase); !v.ok {
				break
			}
			// The MaaS route needs its policy enforced whatever the
			// enable-auth annotation says: the opt-out is the managed
			// route's only.
			if r.needsAuthPolicy(p) || rt.Name == p.res.Named(engine.RoleMaaSRoute) {
				if v = authVerdict(rt); !v.ok {
					break
				}
			}
		}
		if len(missingRoutes) > 0 {
			v = notReady(ReasonRefsInvalid, "%s", strings.Join(missingRoutes, "; "))
		}
		p.conds.setBool(ConditionHTTPRoutesReady, v.ok, v.reason, v.message)
		missingGateways, err := r.gateways(ctx, p, routes)
		if err != nil {
			return err
		}
		invalid = append(invalid, missingGateways...)
	}

	if len(invalid) > 0 {
		p.conds.set(v1alpha2.ConditionRouterReady, metav1.ConditionFalse, ReasonRefsInvalid, strings.Join(invalid, "; "))
		return nil
	}
	p.conds.sum(v1alpha2.ConditionRouterReady, routerConditions, ReasonNoRouter)
	return nil
}

func hasScheduler(spec *v1alpha2.LLMInferenceServiceSpec) bool {
	return spec != nil && spec.Router != nil && spec.Router.Scheduler != nil
}

// poolVerdict is ready when either pool of the service is; for a pool
// reference, when the referenced pool is (in either group). It returns a
// message instead when the reference does not resolve.
func (r *Reconciler) poolVerdict(ctx context.Context, p *pass) (verdict, string, error) {
	ns := p.svc.Namespace
	v1Name, alpha2Name := p.res.Named(engine.RolePool), p.res.Named(engine.RolePoolV1alpha2)
	ref := poolRef(p.plan.Shape)
	if ref != "" {
		v1Name, alpha2Name = ref, ref
	}
	v1, alpha2 := &gieapiv1.InferencePool{}, &gieapixv1alpha2.InferencePool{}
	var verdicts []verdict
	for _, pool := range []struct {
		crd, name string
		obj       client.Object
		verdict   func() verdict
	}{
		{crdPoolV1, v1Name, v1, func() verdict { return poolV1Verdict(v1) }},
		{crdPoolV1alpha2, alpha2Name, alpha2, func() verdict { return poolAlpha2Verdict(alpha2) }},
	} {
		if pool.name == "" || !r.kinds.hasCRD(pool.crd) {
			continue
		}
		ok, err := r.readChild(ctx, p, pool.name, pool.obj)
		if err != nil {
			return verdict{}, "", err
		}
		if ok {
			verdicts = append(verdicts, pool.verdict())
		}
	}
	if ref != "" && len(verdicts) == 0 {
		return verdict{}, fmt.Sprintf("spec.router.scheduler.pool.ref: InferencePool %s/%s does not exist", ns, ref), nil
	}
	if len(verdicts) == 0 {
		return notReady(ReasonPoolNotReady, "InferencePool %s: not created yet", p.plan.Names.Pool), "", nil
	}
	for _, v := range verdicts {
		if v.ok {
			return v, "", nil
		}
	}
	return verdicts[0], "", nil
}

// routes returns the live routes the service is served through: the
// managed one and its MaaS route, or those named in route.http.refs; and a
// message for each reference that does not resolve.
func (r *Reconciler) routes(ctx context.Context, p *pass) ([]*gatewayv1.HTTPRoute, []string, error) {
	ns := p.svc.Namespace
	var names []string
	var refs bool
	if route := p.res.Named(engine.RoleRoute); route != "" {
		names = []string{route}
		if maas := p.res.Named(engine.RoleMaaSRoute); maas != "" {
			names = append(names, maas)
		}
	} else {
		names, refs = routeRefs(p.plan.Shape), true
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	if !r.kinds.hasCRD(crdHTTPRoute) {
		return nil, []string{"the CustomResourceDefinition " + crdHTTPRoute + " is not established"}, nil
	}
	var out []*gatewayv1.HTTPRoute
	var missing []string
	for i, name := range names {
		rt := &gatewayv1.HTTPRoute{}
		found, err := r.readChild(ctx, p, name, rt)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case found:
			out = append(out, rt)
		case refs:
			missing = append(missing, fmt.Sprintf("spec.router.route.http.refs[%d]: HTTPRoute %s/%s does not exist", i, ns, name))
		default:
			// The managed route was just applied and the cache has not
			// seen it yet: use the rendered one, which has no status.
			if rendered := renderedRoute(p, name); rendered != nil {
				out = append(out, rendered)
			}
		}
	}
	return out, missing, nil
}

// gateways sets GatewaysReady and the addresses from the Gateways the
// routes attach to. A Gateway named in gateway.refs that does not exist is
// an invalid reference; the platform's gateway missing is only not ready.
func (r *Reconciler) gateways(ctx context.Context, p *pass, routes []*gatewayv1.HTTPRoute) ([]string, error) {
	explicit := map[gatewayKey]int{}
	if rt := p.plan.Shape.Router; rt != nil && rt.Gateway != nil {
		for i, g := range rt.Gateway.Refs {
			ns := g.Namespace
			if ns == "" {
				ns = p.svc.Namespace
			}
			explicit[gatewayKey{namespace: ns, name: g.Name}] = i
		}
	}
	if !r.kinds.hasCRD(crdGateway) {
		p.conds.set(ConditionGatewaysReady, metav1.ConditionFalse, ReasonCRDMissing, "the CustomResourceDefinition "+crdGateway+" is not established")
		p.status.URL, p.status.Addresses = "", nil
		return nil, nil
	}
	live := map[gatewayKey]*gatewayv1.Gateway{}
	var missing []string
	v := verdict{ok: true, reason: ReasonReady}
	var keys []gatewayKey
	for _, rt := range routes {
		for _, k := range parentGateways(rt) {
			if _, seen := live[k]; seen {
				continue
			}
			keys = append(keys, k)
			g := &gatewayv1.Gateway{}
			found, err := r.getOptional(ctx, types.NamespacedName{Namespace: k.namespace, Name: k.name}, g)
			if err != nil {
				return nil, err
			}
			if !found {
				live[k] = nil
				if i, ok := explicit[k]; ok {
					missing = append(missing, fmt.Sprintf("spec.router.gateway.refs[%d]: Gateway %s does not exist", i, k))
				} else if v.ok {
					v = notReady(ReasonGatewaysNotReady, "Gateway %s does not exist", k)
				}
				continue
			}
			live[k] = g
			if gv := gatewayVerdict(g); !gv.ok && v.ok {
				v = gv
			}
		}
	}
	if len(keys) == 0 {
		v = notReady(ReasonGatewaysNotReady, "the routes attach to no Gateway")
	}
	if len(missing) > 0 {
		v = notReady(ReasonRefsInvalid, "%s", strings.Join(missing, "; "))
	}
	p.conds.setBool(ConditionGatewaysReady, v.ok, v.reason, v.message)

	internal := gatewayKey{namespace: r.opts.InternalGatewayNamespace, name: r.opts.InternalGatewayName}
	var addrs []v1alpha2.Address
	for _, rt := range routes {
		addrs = append(addrs, routeAddresses(rt, live, internal)...)
	}
	p.status.Addresses = sortAddresses(addrs)
	if len(p.status.Addresses) == 0 {
		p.status.Addresses = nil
	}
	p.status.URL = primaryURL(p.status.Addresses)
	return missing, nil
}

// renderedRoute is the rendered route named name as a typed object.
func renderedRoute(p *pass, name string) *gatewayv1.HTTPRoute {
	for _, u := range p.children {
		if u.GroupVersionKind() != gvkHTTPRoute || u.GetName() != name {
			continue
		}
		rt := &gatewayv1.HTTPRoute{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rt); err != nil {
			return nil
		}
		return rt
	}
	return nil
}
