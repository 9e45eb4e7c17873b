package chart

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/internal/crdlifecycle"
)

// TestGIECRDsHaveOneOwner is the default install: odh-serving-crds (with
// createGIECRDs=true, installed by TestMain with the real helm) and the
// controller with --manage-crds (the odh-serving chart's default), whose
// start applies the GIE CRDs with crdlifecycle.Apply. The chart is their
// owner: each GIE CRD is left with one field manager (the status the API
// server writes aside), Apply says it leaves them to the release, and a
// helm upgrade of the chart goes through and keeps that one manager.
func TestGIECRDsHaveOneOwner(t *testing.T) {
	gie, err := crds.Load(crds.GIE)
	if err != nil {
		t.Fatal(err)
	}
	managers := func(when string) {
		t.Helper()
		for _, want := range gie {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := cp.Client.Get(t.Context(), client.ObjectKey{Name: want.Name}, crd); err != nil {
				t.Fatalf("%s: CRD %s: %v", when, want.Name, err)
			}
			var names []string
			for _, m := range crd.ManagedFields {
				if m.Subresource == "" && !slices.Contains(names, m.Manager) {
					names = append(names, m.Manager)
				}
			}
			if len(names) != 1 {
				t.Errorf("%s: CRD %s has field managers %v, want one owner", when, want.Name, names)
			}
		}
	}
	managers("after helm install")

	// What the controller does at start with --manage-crds, twice: a
	// restart must not take the CRDs over either.
	for range 2 {
		report, err := crdlifecycle.Apply(t.Context(), cp.Client, crdlifecycle.ApplyOptions{Alpha2: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range report.Results {
			if res.Action != crdlifecycle.ActionSkipped {
				t.Errorf("the controller's CRD lifecycle %s %s (%s); want it left to the Helm release", res.Action, res.Name, res.Reason)
			}
		}
	}
	managers("after the controller started")

	helm.Must(t, append([]string{"upgrade", crdsRelease, crdsChartDir, "-n", crdsNamespace}, webhookArgs()...)...)
	managers("after helm upgrade")
}
