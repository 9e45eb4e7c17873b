package controllertest

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func networkPolicy() client.Object { return &networkingv1.NetworkPolicy{} }

// TestNetworkPolicyApplied: the controller applies each workload's
// NetworkPolicy (issue #32, item 9), and its selectors pick the pods the
// cluster actually runs: the workload's own (made by
// kube-controller-manager from the Deployment) and the endpoint picker's.
// The local cluster enforces no NetworkPolicy, so this checks the policy,
// not the packets. Turned off (--network-policy=false), the controller
// removes it.
func TestNetworkPolicyApplied(t *testing.T) {
	e := startWithGateway(t)
	e.create(simService("np", managedRouter))
	e.waitExists(networkPolicy, "np-kserve")
	np := &networkingv1.NetworkPolicy{}
	e.must(e.c.Get(t.Context(), clientKey(e.ns, "np-kserve"), np))
	if ref := metav1.GetControllerOf(np); ref == nil || ref.Kind != "LLMInferenceService" || ref.Name != "np" {
		t.Errorf("NetworkPolicy np-kserve's controller = %+v, want the service", ref)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 2 {
		t.Fatalf("NetworkPolicy np-kserve: policyTypes %v, %d ingress rules; want Ingress and 2 rules", np.Spec.PolicyTypes, len(np.Spec.Ingress))
	}
	selects := func(sel *metav1.LabelSelector, p *corev1.Pod) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		e.must(err)
		return s.Matches(labels.Set(p.Labels))
	}
	testenv.Eventually(t, "the policy's selectors pick the running pods of np: its workload's and its endpoint picker's", func() error {
		pods := &corev1.PodList{}
		if err := e.c.List(t.Context(), pods, client.InNamespace(e.ns), client.MatchingLabels{convention.LabelName: "np"}); err != nil {
			return err
		}
		var workload, picker int
		for i := range pods.Items {
			p := &pods.Items[i]
			isPicker := p.Labels[convention.LabelComponent] == build.ComponentScheduler
			if isPicker {
				picker++
			} else {
				workload++
			}
			if got := selects(&np.Spec.PodSelector, p); got == isPicker {
				return fmt.Errorf("the podSelector selects pod %s (labels %v): %v", p.Name, p.Labels, got)
			}
			if got := selects(np.Spec.Ingress[1].From[0].PodSelector, p); got == isPicker {
				return fmt.Errorf("the own-pods peer selects pod %s (labels %v): %v", p.Name, p.Labels, got)
			}
			for _, peer := range np.Spec.Ingress[0].From {
				if peer.PodSelector != nil && selects(peer.PodSelector, p) != isPicker {
					return fmt.Errorf("the endpoint picker peer selects pod %s (labels %v): %v", p.Name, p.Labels, !isPicker)
				}
			}
		}
		if workload == 0 || picker == 0 {
			return fmt.Errorf("%d workload pods and %d endpoint picker pods; want both", workload, picker)
		}
		return nil
	})
	var gateways []string
	for _, peer := range np.Spec.Ingress[0].From {
		if peer.NamespaceSelector != nil {
			for _, r := range peer.NamespaceSelector.MatchExpressions {
				gateways = append(gateways, r.Values...)
			}
		}
	}
	if !slices.Contains(gateways, e.sys) {
		t.Errorf("the policy admits namespaces %v; want the ingress gateway's, %s", gateways, e.sys)
	}

	e.stop()
	e.opts.WithoutNetworkPolicy = true
	e.run()
	e.waitGone(networkPolicy, "np-kserve")
}
