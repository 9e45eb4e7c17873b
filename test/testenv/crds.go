package testenv

import (
	"context"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
)

// InstallCRDs creates the CRDs of the named sets of api/crds that are
// missing, waits until each is established, and, when the test ends,
// deletes the ones it created and waits until they are gone, so the
// control plane's next test finds it as it was.
func InstallCRDs(tb testing.TB, c client.Client, sets ...string) {
	tb.Helper()
	defs, err := crds.Load(sets...)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	for _, crd := range defs {
		err := c.Create(ctx, crd.DeepCopy())
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			tb.Fatalf("create CRD %s: %v", crd.Name, err)
		}
		tb.Cleanup(func() { removeCRD(tb, c, crd.Name) })
	}
	for _, crd := range defs {
		Eventually(tb, "CRD "+crd.Name+" is established", func() error {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("not established: %v", got.Status.Conditions)
		})
	}
}

func removeCRD(tb testing.TB, c client.Client, name string) {
	tb.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = name
	if err := c.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
		tb.Errorf("delete CRD %s: %v", name, err)
		return
	}
	Eventually(tb, "CRD "+name+" is gone", func() error {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
}
