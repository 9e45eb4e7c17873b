package controllertest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/presets"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestStaticMode: Helm made the children (here: the test, in phase dual);
// the controller only moves the route's weights, under its own field
// manager, and reports status.
func TestStaticMode(t *testing.T) {
	e := startWithGateway(t, func(o *controller.Options) { o.StaticMode = true })
	ctx := context.Background()
	svc := e.create(simulator)
	catalog, err := presets.Catalog(e.sys, "kserve-", nil)
	e.must(err)
	images, err := presets.Images()
	e.must(err)
	res, err := engine.Render(ctx, svc, catalog, engine.Options{SystemNamespace: e.sys, Phase: convention.PhaseDual, Images: images})
	e.must(err)
	objs, err := res.Unstructured()
	e.must(err)
	for _, u := range objs {
		e.must(e.c.Create(ctx, u, client.FieldOwner("helm")))
	}

	testenv.Eventually(t, "the route moves to v1", func() error {
		e.simulate()
		rt := e.route("sim-kserve-route")
		if w := poolWeights(rt); !slices.Equal(w["inference.networking.k8s.io"], []int32{100}) {
			return fmt.Errorf("weights %v", w)
		}
		return nil
	})
	rt := e.route("sim-kserve-route")
	managers := map[string]bool{}
	for _, m := range rt.ManagedFields {
		managers[m.Manager] = true
	}
	if !managers["odh-serving-migration"] || managers["odh-serving"] {
		t.Errorf("route field managers = %v, want helm and odh-serving-migration only", managers)
	}
	got := e.waitReady("sim")
	if ip := got.Status.InferencePool; ip == nil || ip.MigrationPhase != "v1" {
		t.Errorf("status.inferencePool = %+v, want phase v1", ip)
	}
	if len(got.Finalizers) > 0 {
		t.Errorf("finalizers %v in static mode", got.Finalizers)
	}
	d := &appsv1.Deployment{}
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "sim-kserve"}, d))
	if len(d.OwnerReferences) > 0 || d.Annotations[controller.AnnotationAppliedHash] != "" {
		t.Errorf("static mode touched the Deployment: %+v", d.ObjectMeta)
	}
	// Helm renders no key: the serving secret the pods mount comes from the
	// controller in static mode too.
	sec := &corev1.Secret{}
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "sim-kserve-self-signed-certs"}, sec))
	if len(sec.Data["tls.crt"]) == 0 || len(sec.Data["tls.key"]) == 0 {
		t.Errorf("secret %s has keys %v, want tls.crt and tls.key", sec.Name, slices.Sorted(maps.Keys(sec.Data)))
	}
}
