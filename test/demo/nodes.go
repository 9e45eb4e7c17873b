package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
)

// nodeTable prints the cluster's nodes as the scheduler sees them: the
// GPU model, the GPUs its pods request of the GPUs it has, and its pods
// (with their GPUs), as kubectl describe node sums them up.
func nodeTable(ctx context.Context, c client.Client) (string, error) {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return "", fmt.Errorf("list nodes: %w", err)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods); err != nil {
		return "", fmt.Errorf("list pods: %w", err)
	}
	byNode := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "NODE\tGPU\tGPUS (REQUESTED/ALLOCATABLE)\tPODS")
	for _, n := range nodes.Items {
		product := n.Labels[kwokcluster.GPUProductLabel]
		if product == "" {
			product = "<none>"
		}
		allocatable := n.Status.Allocatable[kwokcluster.GPUResource]
		requested := int64(0)
		var names []string
		onNode := byNode[n.Name]
		slices.SortFunc(onNode, func(a, b corev1.Pod) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
		for _, p := range onNode {
			g := podGPUs(&p)
			requested += g
			name := p.Name
			if g > 0 {
				name += fmt.Sprintf(" (%d GPU)", g)
			}
			names = append(names, name)
		}
		podCell := "<none>"
		if len(names) > 0 {
			podCell = fmt.Sprintf("%d: %s", len(names), strings.Join(names, ", "))
		}
		fmt.Fprintf(w, "%s\t%s\t%d/%d\t%s\n", n.Name, product, requested, allocatable.Value(), podCell)
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// podGPUs is what a pod requests of GPUs: the sum over its containers, or
// the largest init container's when that is more (the scheduler's rule).
func podGPUs(p *corev1.Pod) int64 {
	var sum, initMax int64
	for _, c := range p.Spec.Containers {
		sum += gpus(c)
	}
	for _, c := range p.Spec.InitContainers {
		initMax = max(initMax, gpus(c))
	}
	return max(sum, initMax)
}

func gpus(c corev1.Container) int64 {
	if q, ok := c.Resources.Requests[kwokcluster.GPUResource]; ok {
		return q.Value()
	}
	q := c.Resources.Limits[kwokcluster.GPUResource]
	return q.Value()
}
