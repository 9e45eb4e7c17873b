package crdlifecycle

import (
	"context"
	"fmt"
	"slices"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// ServingGroup is the API group odh-serving serves; its CRDs are ours
// whoever installed them.
const ServingGroup = "serving.kserve.io"

// CRDStatus describes one CRD odh-serving owns, as it is in the cluster.
type CRDStatus struct {
	// Name is the CRD's name, such as inferencepools.inference.networking.k8s.io.
	Name string
	// Kind of its custom resources.
	Kind string
	// Installed says the CRD exists.
	Installed bool
	// Ours says odh-serving owns the live CRD: it is in the serving.kserve.io
	// group, or labelled managed-by odh-serving, or odh-serving manages
	// fields of it. Remove deletes only CRDs that are ours.
	Ours bool
	// Established says the API server serves it.
	Established bool
	// Served are the served versions, in the CRD's order; Storage is the
	// version stored in etcd.
	Served  []string
	Storage string
	// BundleVersion is the GIE or llm-d bundle version, if any.
	BundleVersion string
	// Managers are the field managers of the CRD, sorted.
	Managers []string
	// Count is the number of custom resources in all namespaces.
	Count int
}

var loadOwned = sync.OnceValues(func() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return crds.Load(crds.Serving, crds.GIE)
})

// Status lists every CRD odh-serving owns, installed or not, in a stable
// order: the serving.kserve.io ones, then GIE's.
func Status(ctx context.Context, c client.Client) ([]CRDStatus, error) {
	found, err := lookup(ctx, c)
	if err != nil {
		return nil, err
	}
	out := make([]CRDStatus, 0, len(found))
	for _, f := range found {
		st := CRDStatus{Name: f.want.Name, Kind: f.want.Spec.Names.Kind}
		live := f.live
		if live == nil {
			out = append(out, st)
			continue
		}
		st.Installed = true
		st.Ours = isOurs(live)
		st.BundleVersion = bundleVersion(live)
		for _, v := range live.Spec.Versions {
			if v.Served {
				st.Served = append(st.Served, v.Name)
			}
			if v.Storage {
				st.Storage = v.Name
			}
		}
		for _, mf := range live.ManagedFields {
			if !slices.Contains(st.Managers, mf.Manager) {
				st.Managers = append(st.Managers, mf.Manager)
			}
		}
		slices.Sort(st.Managers)
		for _, cond := range live.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				st.Established = true
			}
		}
		if st.Established {
			items, err := customResources(ctx, c, live)
			if err != nil {
				return nil, err
			}
			st.Count = len(items)
		}
		out = append(out, st)
	}
	return out, nil
}

// found is one CRD of ours and its live copy, nil when absent.
type found struct {
	want, live *apiextensionsv1.CustomResourceDefinition
}

// lookup reads the live copy of every CRD odh-serving owns.
func lookup(ctx context.Context, c client.Client) ([]found, error) {
	owned, err := loadOwned()
	if err != nil {
		return nil, fmt.Errorf("load the embedded CRDs: %w", err)
	}
	out := make([]found, 0, len(owned))
	for _, want := range owned {
		live := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: want.Name}, live)
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return nil, fmt.Errorf("read CRD %s: %w", want.Name, err)
		}
		out = append(out, found{want: want, live: live})
	}
	return out, nil
}

func isOurs(crd *apiextensionsv1.CustomResourceDefinition) bool {
	if crd.Spec.Group == ServingGroup || crd.Labels[convention.LabelManagedBy] == convention.ManagedBy {
		return true
	}
	for _, mf := range crd.ManagedFields {
		if mf.Manager == convention.FieldManager {
			return true
		}
	}
	return false
}

// customResources lists the metadata of a CRD's custom resources in all
// namespaces, in pages.
func customResources(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) ([]metav1.PartialObjectMetadata, error) {
	ver := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			ver = v.Name
		}
	}
	var out []metav1.PartialObjectMetadata
	cont := ""
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.APIVersion = crd.Spec.Group + "/" + ver
		list.Kind = crd.Spec.Names.ListKind
		if list.Kind == "" {
			list.Kind = crd.Spec.Names.Kind + "List"
		}
		if err := c.List(ctx, list, client.Limit(500), client.Continue(cont)); err != nil {
			return nil, fmt.Errorf("list %s: %w", crd.Name, err)
		}
		out = append(out, list.Items...)
		cont = list.Continue
		if cont == "" {
			return out, nil
		}
	}
}
