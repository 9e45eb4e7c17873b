package gitops

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestKuadrantPoliciesSyncFirst: in every CI render of the chart (the
// goldens of test/chart), Kuadrant's policies are in sync wave -1 and
// everything else in a later one, so Argo CD applies the policies first.
// Without Kuadrant's CRDs that wave fails and Argo CD stops the sync before
// any Gateway or route exists; SkipDryRunOnMissingResource would otherwise
// let the routes of the same wave through while the policies fail
// (docs/auth.md, docs/gitops.md).
func TestKuadrantPoliciesSyncFirst(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "chart", "testdata", "odh-serving", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no chart goldens: %v", err)
	}
	policies := 0
	for _, file := range files {
		for _, d := range testenv.Documents(t, file) {
			o := d.Object
			wave := 0
			if w, ok := o.GetAnnotations()["argocd.argoproj.io/sync-wave"]; ok {
				var err error
				if wave, err = strconv.Atoi(w); err != nil {
					t.Fatalf("%s: %s %s: sync wave %q: %v", d.Where(), o.GetKind(), o.GetName(), w, err)
				}
			}
			isPolicy := o.GroupVersionKind().Group == convention.KuadrantGroup
			if isPolicy {
				policies++
			}
			if isPolicy && wave != -1 || !isPolicy && wave < 0 {
				t.Errorf("%s: %s %s in sync wave %d; want Kuadrant's policies in -1 and everything else after", d.Where(), o.GetKind(), o.GetName(), wave)
			}
		}
	}
	if policies == 0 {
		t.Error("no Kuadrant policy in the chart's goldens: auth-values and maas-values should render some")
	}
}
