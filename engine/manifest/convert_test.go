package manifest_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
)

// ToUnstructured gives what apimachinery's converter gives, for every
// child of every engine golden case in every migration phase and
// certificate mode.
func TestToUnstructuredMatchesApimachinery(t *testing.T) {
	inputs := golden.Glob(t, "../testdata/*/input.yaml")
	images := presetstest.Images(t)
	compared := 0
	for _, file := range inputs {
		in, err := manifest.DecodeFile(file)
		if err != nil {
			t.Fatal(err)
		}
		catalog := presetstest.Catalog(t, in.Presets)
		for _, svc := range in.Services {
			for _, phase := range convention.Phases {
				for _, mode := range []convention.CertMode{convention.CertSelfSigned, convention.CertServiceCA, convention.CertManager} {
					res, err := engine.Render(t.Context(), svc.Service, catalog, engine.Options{Images: images, Phase: phase, CertMode: mode})
					if err != nil {
						continue // the bad-input cases
					}
					for _, obj := range res.Objects {
						want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
						if err != nil {
							t.Fatal(err)
						}
						got, err := manifest.ToUnstructured(obj)
						if err != nil {
							t.Fatal(err)
						}
						if diff := cmp.Diff(want, got); diff != "" {
							t.Errorf("%s, %s %s (-apimachinery +ToUnstructured):\n%s", file, obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), diff)
						}
						compared++
					}
				}
			}
		}
	}
	if compared < 1000 {
		t.Errorf("compared %d objects; the golden cases give more", compared)
	}
	t.Logf("compared %d objects", compared)
}
