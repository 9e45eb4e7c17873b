package build

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// ComponentRouter labels the route.
const ComponentRouter = "llminferenceservice-router"

// route builds the managed HTTPRoute: the merged route spec, attached to
// the gateways in gateway.refs when there are any, with backends to the
// service's pool rewritten for the scheduler setup and the migration phase.
func (b *builder) route() error {
	r := b.spec.Router
	if r == nil || r.Route == nil || r.Route.HTTP == nil || r.Route.HTTP.Spec == nil || len(r.Route.HTTP.Refs) > 0 {
		return nil
	}
	spec := r.Route.HTTP.Spec.DeepCopy()
	if r.Gateway != nil && len(r.Gateway.Refs) > 0 {
		spec.ParentRefs = nil
		for _, g := range r.Gateway.Refs {
			ref := gatewayv1.ParentReference{
				Group: ptr(gatewayv1.Group(gatewayv1.GroupName)),
				Kind:  ptr(gatewayv1.Kind("Gateway")),
				Name:  gatewayv1.ObjectName(g.Name),
			}
			if g.Namespace != "" {
				ref.Namespace = ptr(gatewayv1.Namespace(g.Namespace))
			}
			if g.SectionName != nil {
				ref.SectionName = ptr(gatewayv1.SectionName(*g.SectionName))
			}
			spec.ParentRefs = append(spec.ParentRefs, ref)
		}
	}
	if len(spec.ParentRefs) == 0 {
		return fmt.Errorf("spec.router.route.http.spec.parentRefs: the route attaches to no gateway; set gateway.refs or use the route preset")
	}
	spec.ParentRefs = b.withInternalGateway(spec.ParentRefs)
	spec.Rules = b.modelRouting(spec.Rules)
	if err := b.checkRoute(spec.Rules); err != nil {
		return err
	}
	if err := b.stripCredentials(spec.Rules); err != nil {
		return err
	}
	for i := range spec.Rules {
		spec.Rules[i].BackendRefs = b.backends(spec.Rules[i].BackendRefs)
	}
	meta := b.meta(b.names.route, ComponentRouter)
	if b.opts.Phase == convention.PhaseV1 || b.opts.Phase == convention.PhaseRetired {
		meta.Annotations = map[string]string{convention.AnnotationMigrated: "v1"}
	}
	b.add(&gatewayv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: meta,
		Spec:       *spec,
	})
	return b.maasRoute(spec, meta.Annotations)
}

// withInternalGateway adds the internal gateway to parents that include the
// ingress gateway, so in-cluster callers reach every route the ingress
// serves. Routes attached elsewhere by the user stay as written.
func (b *builder) withInternalGateway(parents []gatewayv1.ParentReference) []gatewayv1.ParentReference {
	if !slices.ContainsFunc(parents, func(p gatewayv1.ParentReference) bool { return b.isGateway(p, b.opts.IngressGateway) }) {
		return parents
	}
	return b.withGateway(parents, b.opts.InternalGateway)
}

// withGateway adds g to parents unless it is empty or there already.
func (b *builder) withGateway(parents []gatewayv1.ParentReference, g GatewayRef) []gatewayv1.ParentReference {
	if g.Name == "" || slices.ContainsFunc(parents, func(p gatewayv1.ParentReference) bool { return b.isGateway(p, g) }) {
		return parents
	}
	return append(parents, gatewayv1.ParentReference{
		Group:     ptr(gatewayv1.Group(gatewayv1.GroupName)),
		Kind:      ptr(gatewayv1.Kind("Gateway")),
		Name:      gatewayv1.ObjectName(g.Name),
		Namespace: ptr(gatewayv1.Namespace(g.Namespace)),
	})
}

// isGateway says whether the parent p is the Gateway g.
func (b *builder) isGateway(p gatewayv1.ParentReference, g GatewayRef) bool {
	ns := b.svc.Namespace
	if p.Namespace != nil {
		ns = string(*p.Namespace)
	}
	isGateway := (p.Kind == nil || *p.Kind == "Gateway") && (p.Group == nil || *p.Group == gatewayv1.GroupName)
	return isGateway && string(p.Name) == g.Name && ns == g.Namespace
}

// backends rewrites references to the service's own InferencePool (in
// either API group, by its default name): to the workload Service when
// there is no scheduler, to the referenced pool under pool.ref, and to the
// pool groups of the migration phase. Other backends stay as written.
func (b *builder) backends(refs []gatewayv1.HTTPBackendRef) []gatewayv1.HTTPBackendRef {
	defaultPool, err := childOf(b.svc.Name, "-inference-pool")
	if err != nil {
		return refs
	}
	var out []gatewayv1.HTTPBackendRef
	for _, ref := range refs {
		if !isPoolRef(ref, defaultPool) {
			out = append(out, ref)
			continue
		}
		if b.spec.Router.Scheduler == nil {
			svc := ref
			svc.Group = ptr(gatewayv1.Group(""))
			svc.Kind = ptr(gatewayv1.Kind("Service"))
			svc.Name = gatewayv1.ObjectName(b.names.workloadService)
			svc.Port = ptr(gatewayv1.PortNumber(WorkloadPort))
			out = append(out, svc)
			continue
		}
		out = append(out, b.phaseBackends(ref)...)
	}
	return out
}

func isPoolRef(ref gatewayv1.HTTPBackendRef, defaultPool string) bool {
	if ref.Kind == nil || *ref.Kind != "InferencePool" || string(ref.Name) != defaultPool {
		return false
	}
	g := ""
	if ref.Group != nil {
		g = string(*ref.Group)
	}
	return g == GroupPoolV1 || g == GroupPoolV1alpha2
}

// phaseBackends is one pool backend per pool group the phase routes to,
// weighted so traffic moves only when the phase says. A referenced pool is
// named only in the groups it is known to exist in (RefPool).
func (b *builder) phaseBackends(ref gatewayv1.HTTPBackendRef) []gatewayv1.HTTPBackendRef {
	at := func(group string, weight *int32) gatewayv1.HTTPBackendRef {
		r := *ref.DeepCopy()
		r.Group = ptr(gatewayv1.Group(group))
		r.Name = gatewayv1.ObjectName(b.names.pool)
		r.Weight = weight
		return r
	}
	if rp := RefPool(b.spec, b.opts); rp != nil && len(rp.Found) != 2 {
		return []gatewayv1.HTTPBackendRef{at(rp.Groups[0], ref.Weight)}
	}
	switch b.opts.Phase {
	case convention.PhaseAlpha2:
		return []gatewayv1.HTTPBackendRef{at(GroupPoolV1alpha2, ref.Weight)}
	case convention.PhaseDual:
		return []gatewayv1.HTTPBackendRef{at(GroupPoolV1alpha2, ptr[int32](100)), at(GroupPoolV1, ptr[int32](0))}
	case convention.PhaseV1:
		return []gatewayv1.HTTPBackendRef{at(GroupPoolV1, ptr[int32](100)), at(GroupPoolV1alpha2, ptr[int32](0))}
	default:
		return []gatewayv1.HTTPBackendRef{at(GroupPoolV1, ref.Weight)}
	}
}

// PoolRef is how the routes name the pool spec.router.scheduler.pool.ref
// names, which the service does not manage and which usually exists in one
// API group only.
type PoolRef struct {
	// Name is the referenced pool.
	Name string
	// Found are the API groups it is known to exist in
	// (Options.PoolRefGroups).
	Found []string
	// Groups are the API groups the routes name it in: the one it exists
	// in; when it exists in both, those of the migration phase, weighted
	// as for a managed pool; when it is known in neither, the assumed one.
	Groups []string
	// Assumed says the pool is not known to exist in either group (not
	// found, or not looked up offline): Groups is then the group the phase
	// sends traffic to, inference.networking.x-k8s.io in alpha2 and dual
	// and inference.networking.k8s.io in v1 and retired.
	Assumed bool
}

// RefPool says how the routes name the pool spec.router.scheduler.pool.ref
// names, from Options.PoolRefGroups and the phase; nil without a pool
// reference.
func RefPool(spec *v1alpha2.LLMInferenceServiceSpec, opts Options) *PoolRef {
	r := spec.Router
	if r == nil || r.Scheduler == nil || r.Scheduler.Pool == nil || r.Scheduler.Pool.Ref == nil || r.Scheduler.Pool.Ref.Name == "" {
		return nil
	}
	rp := &PoolRef{Name: r.Scheduler.Pool.Ref.Name}
	for _, g := range []string{GroupPoolV1, GroupPoolV1alpha2} {
		if slices.Contains(opts.PoolRefGroups, g) {
			rp.Found = append(rp.Found, g)
		}
	}
	traffic := GroupPoolV1
	if opts.Phase == convention.PhaseAlpha2 || opts.Phase == convention.PhaseDual {
		traffic = GroupPoolV1alpha2
	}
	switch len(rp.Found) {
	case 0:
		rp.Groups, rp.Assumed = []string{traffic}, true
	case 1:
		rp.Groups = rp.Found
	default: // as phaseBackends names a managed pool: the traffic's group first
		rp.Groups = []string{traffic}
		if opts.Phase == convention.PhaseDual || opts.Phase == convention.PhaseV1 {
			other := GroupPoolV1
			if traffic == GroupPoolV1 {
				other = GroupPoolV1alpha2
			}
			rp.Groups = append(rp.Groups, other)
		}
	}
	return rp
}

// String says how the routes name the pool, for a status message.
func (rp *PoolRef) String() string {
	switch {
	case rp.Assumed:
		return fmt.Sprintf("InferencePool %s is not known to exist in %s or %s; the route assumes it is in %s, the group the migration phase sends traffic to",
			rp.Name, GroupPoolV1, GroupPoolV1alpha2, rp.Groups[0])
	case len(rp.Found) == 1:
		return fmt.Sprintf("InferencePool %s exists in %s only; the route names it in that group", rp.Name, rp.Found[0])
	default:
		return fmt.Sprintf("InferencePool %s exists in %s and %s; the route names it in %s, as the migration phase says",
			rp.Name, GroupPoolV1, GroupPoolV1alpha2, strings.Join(rp.Groups, " and "))
	}
}
