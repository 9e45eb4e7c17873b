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
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
)

// layout is what a render produced, by role.
type layout struct {
	main, prefill, scheduler string // Deployments
	mainLWS, prefillLWS      string
	poolV1, poolAlpha2       string
	route                    string
	workloadService          string
}

func layoutOf(p *pass) layout {
	var l layout
	for _, u := range p.children {
		component := u.GetLabels()[build.LabelComponent]
		switch u.GroupVersionKind() {
		case gvkDeployment:
			switch component {
			case build.ComponentWorkload:
				l.main = u.GetName()
			case build.ComponentWorkloadPrefill:
				l.prefill = u.GetName()
			case build.ComponentScheduler:
				l.scheduler = u.GetName()
			}
		case gvkLWS:
			if component == build.ComponentWorkloadPrefill {
				l.prefillLWS = u.GetName()
			} else {
				l.mainLWS = u.GetName()
			}
		case gvkPoolV1:
			l.poolV1 = u.GetName()
		case gvkPoolV1alpha2:
			l.poolAlpha2 = u.GetName()
		case gvkHTTPRoute:
			l.route = u.GetName()
		case gvkService:
			if component == build.ComponentWorkload {
				l.workloadService = u.GetName()
			}
		}
	}
	return l
}

// observe works out the status from the children in the cache.
func (r *Reconciler) observe(ctx context.Context, p *pass) error {
	p.settled = true
	if stopped(p.svc) {
		p.conds.remove(workloadConditions...)
		p.conds.remove(routerConditions...)
		msg := "the service is stopped (annotation " + build.AnnotationStop + "); remove the annotation to start it"
		for _, t := range []string{v1alpha2.ConditionWorkloadsReady, v1alpha2.ConditionRouterReady, v1alpha2.ConditionReady} {
			p.conds.set(t, metav1.ConditionFalse, ReasonStopped, msg)
		}
		p.status.URL, p.status.Addresses = "", nil
		r.migrationStatus(p)
		return nil
	}
	l := layoutOf(p)
	if err := r.workloads(ctx, p, l); err != nil {
		return err
	}
	if err := r.router(ctx, p, l); err != nil {
		return err
	}
	r.migrationStatus(p)
	p.conds.ready()
	return nil
}

func stopped(svc *v1alpha2.LLMInferenceService) bool {
	return strings.EqualFold(svc.Annotations[build.AnnotationStop], "true")
}

func (r *Reconciler) workloads(ctx context.Context, p *pass, l layout) error {
	main, prefill := &appsv1.Deployment{}, &appsv1.Deployment{}
	mainLWS, prefillLWS := &lwsv1.LeaderWorkerSet{}, &lwsv1.LeaderWorkerSet{}
	for _, c := range []struct {
		condition, name string
		obj             client.Object
		judge           func() verdict
	}{
		{ConditionMainWorkloadReady, l.main, main, func() verdict { return deploymentVerdict(main) }},
		{ConditionWorkerWorkloadReady, l.mainLWS, mainLWS, func() verdict { return lwsVerdict(mainLWS) }},
		{ConditionPrefillWorkloadReady, l.prefill, prefill, func() verdict { return deploymentVerdict(prefill) }},
		{ConditionPrefillWorkerWorkloadReady, l.prefillLWS, prefillLWS, func() verdict { return lwsVerdict(prefillLWS) }},
	} {
		if err := r.objectCondition(ctx, p, c.condition, c.name, c.obj, c.judge); err != nil {
			return err
		}
	}
	p.conds.sum(v1alpha2.ConditionWorkloadsReady, workloadConditions, ReasonReady)
	return nil
}

// objectCondition sets condition t from the readiness of the child name,
// read into obj: Progressing while it is not in the cache yet. Without a
// name the condition does not apply and is removed.
func (r *Reconciler) objectCondition(ctx context.Context, p *pass, t, name string, obj client.Object, judge func() verdict) error {
	if name == "" {
		p.conds.remove(t)
		return nil
	}
	found, err := r.readChild(ctx, p, name, obj)
	if err != nil {
		return err
	}
	v := notReady(ReasonProgressing, "%s %s: not created yet", kindName(obj), name)
	if found {
		v = judge()
	}
	p.conds.setBool(t, v.ok, v.reason, v.message)
	return nil
}

func kindName(obj client.Object) string {
	switch obj.(type) {
	case *lwsv1.LeaderWorkerSet:
		return "LeaderWorkerSet"
	default:
		return "Deployment"
	}
}

// router sets the scheduler, pool, route and gateway conditions, the
// addresses, and RouterReady.
func (r *Reconciler) router(ctx context.Context, p *pass, l layout) error {
	ns := p.svc.Namespace
	var invalid []string

	// The endpoint picker.
	epp := &appsv1.Deployment{}
	if err := r.objectCondition(ctx, p, ConditionSchedulerWorkloadReady, l.scheduler, epp, func() verdict { return deploymentVerdict(epp) }); err != nil {
		return err
	}

	// The pool: either group counts; a referenced pool counts alone.
	if hasScheduler(p.spec) {
		v, missing, err := r.poolVerdict(ctx, p, l)
		if err != nil {
			return err
		}
		if missing != "" {
			invalid = append(invalid, missing)
			v = notReady(ReasonRefsInvalid, "%s", missing)
		}
		p.conds.setBool(ConditionInferencePoolReady, v.ok, v.reason, v.message)
	} else {
		p.conds.remove(ConditionInferencePoolReady)
	}

	// Routes: the managed one, or the user's.
	routes, missingRoutes, err := r.routes(ctx, p, l)
	if err != nil {
		return err
	}
	invalid = append(invalid, missingRoutes...)
	if len(routes) == 0 && len(missingRoutes) == 0 {
		p.conds.remove(ConditionHTTPRoutesReady, ConditionGatewaysReady)
		p.status.Addresses = nil
		if l.workloadService != "" {
			p.status.Addresses = []v1alpha2.Address{{Name: AddressInternal, URL: "https://" + l.workloadService + "." + ns + ".svc.cluster.local"}}
		}
		p.status.URL = primaryURL(p.status.Addresses)
	} else {
		v := verdict{ok: true, reason: ReasonReady}
		for _, rt := range routes {
			if v = routeVerdict(rt, p.decision.Phase); !v.ok {
				break
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
func (r *Reconciler) poolVerdict(ctx context.Context, p *pass, l layout) (verdict, string, error) {
	ns := p.svc.Namespace
	v1Name, alpha2Name := l.poolV1, l.poolAlpha2
	ref := poolRef(p.spec)
	if ref != "" {
		v1Name, alpha2Name = ref, ref
	}
	var verdicts []verdict
	found := false
	if v1Name != "" && r.kinds.hasCRD(crdPoolV1) {
		pool := &gieapiv1.InferencePool{}
		ok, err := r.readChild(ctx, p, v1Name, pool)
		if err != nil {
			return verdict{}, "", err
		}
		if ok {
			found = true
			verdicts = append(verdicts, poolV1Verdict(pool))
		}
	}
	if alpha2Name != "" && r.kinds.hasCRD(crdPoolV1alpha2) {
		pool := &gieapixv1alpha2.InferencePool{}
		ok, err := r.readChild(ctx, p, alpha2Name, pool)
		if err != nil {
			return verdict{}, "", err
		}
		if ok {
			found = true
			verdicts = append(verdicts, poolAlpha2Verdict(pool))
		}
	}
	if ref != "" && !found {
		return verdict{}, fmt.Sprintf("spec.router.scheduler.pool.ref: InferencePool %s/%s does not exist", ns, ref), nil
	}
	if len(verdicts) == 0 {
		return notReady(ReasonPoolNotReady, "InferencePool %s: not created yet", poolName(p.svc, p.spec)), "", nil
	}
	for _, v := range verdicts {
		if v.ok {
			return v, "", nil
		}
	}
	return verdicts[0], "", nil
}

// routes returns the live routes the service is served through: the
// managed one, or those named in route.http.refs; and a message for each
// reference that does not resolve.
func (r *Reconciler) routes(ctx context.Context, p *pass, l layout) ([]*gatewayv1.HTTPRoute, []string, error) {
	ns := p.svc.Namespace
	var names []string
	var refs bool
	if l.route != "" {
		names = []string{l.route}
	} else if rt := p.spec.Router; rt != nil && rt.Route != nil && rt.Route.HTTP != nil {
		for _, ref := range rt.Route.HTTP.Refs {
			names = append(names, ref.Name)
		}
		refs = true
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
	if rt := p.spec.Router; rt != nil && rt.Gateway != nil {
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

// migrationStatus records the pool in use and the migration phase.
func (r *Reconciler) migrationStatus(p *pass) {
	if !hasScheduler(p.spec) {
		p.conds.remove(ConditionInferencePoolMigrated)
		p.status.InferencePool = nil
		return
	}
	d := p.decision
	group := build.GroupPoolV1
	if d.Phase == build.PhaseAlpha2 || d.Phase == build.PhaseDual {
		group = build.GroupPoolV1alpha2
	}
	p.status.InferencePool = &v1alpha2.InferencePoolStatus{Name: poolName(p.svc, p.spec), Group: group, MigrationPhase: string(d.Phase)}
	moved := d.Phase == build.PhaseV1 || d.Phase == build.PhaseRetired
	p.conds.setBool(ConditionInferencePoolMigrated, moved, orDefault(d.Reason, "Decided"), d.Message)
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
