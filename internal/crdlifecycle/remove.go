package crdlifecycle

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxListed is how many leftover custom resources a refusal names.
const MaxListed = 10

// LeftError is Remove's refusal: custom resources of our CRDs are left.
type LeftError struct {
	// Left are the custom resources, as "Kind namespace/name", in CRD order
	// and then the order the API server lists them in.
	Left []string
}

func (e *LeftError) Error() string {
	shown := e.Left
	more := ""
	if len(shown) > MaxListed {
		more = fmt.Sprintf(", and %d more", len(shown)-MaxListed)
		shown = shown[:MaxListed]
	}
	return fmt.Sprintf("refusing to remove the CRDs: %d custom resources are left, and removing a CRD deletes them: %s%s; delete them first",
		len(e.Left), strings.Join(shown, ", "), more)
}

// Remove deletes the CRDs odh-serving owns (see CRDStatus.Ours) when no
// custom resource of any of them is left. Otherwise it deletes nothing and
// returns a *LeftError naming what is left. CRDs that are not ours are
// never deleted. It returns the names of the CRDs it deleted.
//
// A custom resource created between the check and the delete would still
// be lost; stop what creates them (the chart, the controller) first.
func Remove(ctx context.Context, c client.Client) ([]string, error) {
	found, err := lookup(ctx, c)
	if err != nil {
		return nil, err
	}
	var ours []*apiextensionsv1.CustomResourceDefinition
	var left []string
	for _, f := range found {
		if f.live == nil || !isOurs(f.live) {
			continue
		}
		ours = append(ours, f.live)
		items, err := customResources(ctx, c, f.live)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			name := it.Name
			if it.Namespace != "" {
				name = it.Namespace + "/" + it.Name
			}
			left = append(left, f.live.Spec.Names.Kind+" "+name)
		}
	}
	if len(left) > 0 {
		return nil, &LeftError{Left: left}
	}
	var removed []string
	for _, crd := range ours {
		uid := crd.UID
		err := c.Delete(ctx, crd, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) {
			return removed, fmt.Errorf("delete CRD %s: %w", crd.Name, err)
		}
		removed = append(removed, crd.Name)
	}
	return removed, nil
}
