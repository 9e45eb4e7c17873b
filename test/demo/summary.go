package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// objectsByService counts, for each service, the objects of every listable
// kind the API server serves that carry the children's labels and are not
// controlled by anything but a service. Asking discovery instead of naming
// kinds shows whatever the controller made.
func (d *demo) objectsByService(ctx context.Context) (map[string]map[string]int, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(d.restCfg)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	cfg := rest.CopyConfig(d.restCfg)
	// Listing every kind touches deprecated ones (Endpoints, ComponentStatus).
	cfg.WarningHandler = rest.NoWarnings{}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	selector := metav1.ListOptions{LabelSelector: partOf + "=llminferenceservice"}
	byName := map[string]serviceRef{}
	for _, s := range d.services {
		byName[s.Name] = s
	}
	type found struct {
		service string
		gk      schema.GroupKind
	}
	var all []found
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || r.Kind == "Event" {
				continue
			}
			objs, err := mc.Resource(gv.WithResource(r.Name)).List(ctx, selector)
			if err != nil {
				return nil, fmt.Errorf("list %s.%s: %w", r.Name, gv.Group, err)
			}
			for _, o := range objs.Items {
				s, ok := byName[o.Labels["app.kubernetes.io/name"]]
				if !ok || (r.Namespaced && o.Namespace != s.Namespace) {
					continue
				}
				// The cluster's controllers pass the labels on to what they
				// make of the children (ReplicaSets, Pods, EndpointSlices):
				// those are not the service's children.
				if ref := metav1.GetControllerOfNoCopy(&o); ref != nil && ref.Kind != "LLMInferenceService" {
					continue
				}
				all = append(all, found{service: s.String(), gk: schema.GroupKind{Group: gv.Group, Kind: r.Kind}})
			}
		}
	}
	// A kind served by two groups (InferencePool) is named with its group.
	groups := map[string]map[string]bool{}
	for _, f := range all {
		if groups[f.gk.Kind] == nil {
			groups[f.gk.Kind] = map[string]bool{}
		}
		groups[f.gk.Kind][f.gk.Group] = true
	}
	out := map[string]map[string]int{}
	for _, s := range d.services {
		out[s.String()] = map[string]int{}
	}
	for _, f := range all {
		label := f.gk.Kind
		if len(groups[f.gk.Kind]) > 1 {
			label = fmt.Sprintf("%s (%s)", f.gk.Kind, f.gk.Group)
		}
		out[f.service][label]++
	}
	return out, nil
}

// objectTable prints kinds down and services across.
func objectTable(objects map[string]map[string]int, services []serviceRef) string {
	kinds := map[string]bool{}
	for _, byKind := range objects {
		for k := range byKind {
			kinds[k] = true
		}
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	header := []string{"KIND"}
	totals := make([]int, len(services))
	for _, s := range services {
		header = append(header, s.Name)
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		row := []string{kind}
		for i, s := range services {
			n := objects[s.String()][kind]
			totals[i] += n
			cell := "-"
			if n > 0 {
				cell = fmt.Sprint(n)
			}
			row = append(row, cell)
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	row := []string{"total"}
	for _, t := range totals {
		row = append(row, fmt.Sprint(t))
	}
	fmt.Fprintln(w, strings.Join(row, "\t"))
	_ = w.Flush()
	return b.String()
}
