package build

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

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
	return nil
}

// withInternalGateway adds the internal gateway to parents that include the
// ingress gateway, so in-cluster callers reach every route the ingress
// serves. Routes attached elsewhere by the user stay as written.
func (b *builder) withInternalGateway(parents []gatewayv1.ParentReference) []gatewayv1.ParentReference {
	internal := b.opts.InternalGateway
	if internal.Name == "" {
		return parents
	}
	is := func(p gatewayv1.ParentReference, g GatewayRef) bool {
		ns := b.svc.Namespace
		if p.Namespace != nil {
			ns = string(*p.Namespace)
		}
		isGateway := (p.Kind == nil || *p.Kind == "Gateway") && (p.Group == nil || *p.Group == gatewayv1.GroupName)
		return isGateway && string(p.Name) == g.Name && ns == g.Namespace
	}
	var ingress *gatewayv1.ParentReference
	for i := range parents {
		if is(parents[i], internal) {
			return parents
		}
		if ingress == nil && is(parents[i], b.opts.IngressGateway) {
			ingress = &parents[i]
		}
	}
	if ingress == nil {
		return parents
	}
	ref := gatewayv1.ParentReference{
		Group:     ptr(gatewayv1.Group(gatewayv1.GroupName)),
		Kind:      ptr(gatewayv1.Kind("Gateway")),
		Name:      gatewayv1.ObjectName(internal.Name),
		Namespace: ptr(gatewayv1.Namespace(internal.Namespace)),
	}
	return append(parents, ref)
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
// weighted so traffic moves only when the phase says.
func (b *builder) phaseBackends(ref gatewayv1.HTTPBackendRef) []gatewayv1.HTTPBackendRef {
	at := func(group string, weight *int32) gatewayv1.HTTPBackendRef {
		r := *ref.DeepCopy()
		r.Group = ptr(gatewayv1.Group(group))
		r.Name = gatewayv1.ObjectName(b.names.pool)
		r.Weight = weight
		return r
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
