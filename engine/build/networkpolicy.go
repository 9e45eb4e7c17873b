package build

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// LabelNamespaceName is the label the API server puts on every namespace,
// with its name: what a NetworkPolicy selects a namespace by.
const LabelNamespaceName = "kubernetes.io/metadata.name"

// workloadComponents are the component labels of the pods that run a
// model server: the main and prefill workloads, single-node or leader and
// worker.
var workloadComponents = []string{
	ComponentWorkload, ComponentWorkloadPrefill,
	ComponentWorkloadLeader, ComponentWorkloadWorker,
	ComponentWorkloadLeaderPrefill, ComponentWorkloadWorkerPrefill,
}

// networkPolicy is the NetworkPolicy of one workload (named as the
// workload), whose pods carry one of components: ingress to them is
// refused but for
//   - the model server ports (WorkloadPort and the pool's target ports)
//     from the gateways' namespaces (ingress, internal, MaaS for a
//     published service, and those of the route's parents), the service's
//     endpoint picker (or, when the picker is not the service's own, the
//     service's namespace) and the monitoring namespaces;
//   - every port from the service's own serving pods (prefill and decode,
//     leaders and workers), which talk among themselves (KV transfer, the
//     routing sidecar, the multi-node group).
//
// Without it any pod of the cluster reaches the model servers directly,
// past the gateway's auth, tiers and limits.
func (b *builder) networkPolicy(name, component string, components ...string) *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	var ports []networkingv1.NetworkPolicyPort
	for _, p := range b.modelServerPorts() {
		ports = append(ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: ptr(intstr.FromInt32(p))})
	}
	selector := metav1.LabelSelector{
		MatchLabels: map[string]string{convention.LabelPartOf: convention.PartOf, convention.LabelName: b.svc.Name},
	}
	own := selector.DeepCopy()
	own.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: convention.LabelComponent, Operator: metav1.LabelSelectorOpIn, Values: workloadComponents}}
	if len(components) == 1 {
		selector.MatchLabels[convention.LabelComponent] = components[0]
	} else {
		selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: convention.LabelComponent, Operator: metav1.LabelSelectorOpIn, Values: components}}
	}
	fromModelServers := []networkingv1.NetworkPolicyPeer{}
	if ns := b.gatewayNamespaces(); len(ns) > 0 {
		fromModelServers = append(fromModelServers, namespacesPeer(ns))
	}
	switch picker := b.pickerPods(); {
	case picker != nil:
		fromModelServers = append(fromModelServers, networkingv1.NetworkPolicyPeer{PodSelector: picker})
	case b.externalPicker():
		// The picker of a referenced pool (or endpointPickerRef) is not the
		// service's: its pods are not known, only that they serve the
		// service's namespace.
		fromModelServers = append(fromModelServers, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}})
	}
	if len(b.opts.MonitoringNamespaces) > 0 {
		fromModelServers = append(fromModelServers, namespacesPeer(b.opts.MonitoringNamespaces))
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
		ObjectMeta: b.meta(name, component),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: selector,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: fromModelServers, Ports: ports},
				{From: []networkingv1.NetworkPolicyPeer{{PodSelector: own}}},
			},
		},
	}
}

func namespacesPeer(namespaces []string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: LabelNamespaceName, Operator: metav1.LabelSelectorOpIn, Values: namespaces}},
	}}
}

// modelServerPorts are the ports callers reach the model servers on: the
// workload Service's (WorkloadPort) and the pool's target ports, sorted.
func (b *builder) modelServerPorts() []int32 {
	ports := []int32{WorkloadPort}
	if r := b.spec.Router; r != nil && r.Scheduler != nil && r.Scheduler.Pool != nil && r.Scheduler.Pool.Spec != nil {
		for _, p := range r.Scheduler.Pool.Spec.TargetPorts {
			if p.Number != 0 && !slices.Contains(ports, p.Number) {
				ports = append(ports, p.Number)
			}
		}
	}
	slices.Sort(ports)
	return ports
}

// gatewayNamespaces are the namespaces of the gateways that route to the
// service, sorted: the ingress and internal gateways, the MaaS gateway of a
// published service, and the gateways in spec.router.gateway.refs.
func (b *builder) gatewayNamespaces() []string {
	var out []string
	add := func(ns string) {
		if ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	for _, g := range []GatewayRef{b.opts.IngressGateway, b.opts.InternalGateway, b.opts.MaaS.Gateway} {
		if g.Name != "" {
			add(g.Namespace)
		}
	}
	if r := b.spec.Router; r != nil && r.Gateway != nil {
		for _, g := range r.Gateway.Refs {
			ns := g.Namespace
			if ns == "" {
				ns = b.svc.Namespace
			}
			add(ns)
		}
	}
	slices.Sort(out)
	return out
}

// pickerPods selects the service's own endpoint picker pods; nil when the
// service has none.
func (b *builder) pickerPods() *metav1.LabelSelector {
	r := b.spec.Router
	if r == nil || r.Scheduler == nil || r.Scheduler.Template == nil || (r.Scheduler.Pool != nil && r.Scheduler.Pool.Ref != nil) {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: b.labels(ComponentScheduler)}
}

// externalPicker reports whether an endpoint picker that is not the
// service's own picks its pods: a referenced pool's, or the one a managed
// pool's endpointPickerRef names.
func (b *builder) externalPicker() bool {
	r := b.spec.Router
	return r != nil && r.Scheduler != nil && b.pickerPods() == nil
}
