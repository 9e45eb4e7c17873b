package controllertest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/presets"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// childGVKs are every kind the engine renders, listed by its labels.
var childGVKs = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "Secret"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
	{Group: "inference.networking.k8s.io", Version: "v1", Kind: "InferencePool"},
	{Group: "inference.networking.x-k8s.io", Version: "v1alpha2", Kind: "InferencePool"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"},
}

// liveChild is a child found by the engine's labels.
type liveChild struct {
	key string // Kind/name
	// owner is the UID of its controller owner reference, or of the
	// owner-uid annotation for cluster-scoped children.
	owner types.UID
}

// liveChildren lists the objects labelled as children of the service
// called name in the env's namespace (cluster-wide for bindings), sorted.
func (e *env) liveChildren(name string) []liveChild {
	e.t.Helper()
	return e.children(client.MatchingLabels{convention.LabelName: name})[name]
}

// children lists the objects labelled as children of services in the env's
// namespace (cluster-wide for bindings), by service, each sorted; labels
// narrows the selection.
func (e *env) children(labels client.MatchingLabels) map[string][]liveChild {
	e.t.Helper()
	selector := client.MatchingLabels{convention.LabelPartOf: convention.PartOf}
	maps.Copy(selector, labels)
	out := map[string][]liveChild{}
	for _, gvk := range childGVKs {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{selector}
		if gvk.Kind != "ClusterRoleBinding" {
			opts = append(opts, client.InNamespace(e.ns))
		}
		e.must(e.c.List(context.Background(), list, opts...))
		for _, item := range list.Items {
			name := item.Labels[convention.LabelName]
			if gvk.Kind == "ClusterRoleBinding" && item.Annotations[controller.AnnotationOwner] != e.ns+"/"+name {
				continue // another namespace's
			}
			c := liveChild{key: gvk.Kind + "/" + item.Name, owner: types.UID(item.Annotations[controller.AnnotationOwnerUID])}
			if ref := metav1.GetControllerOf(&item); ref != nil {
				c.owner = ref.UID
			}
			out[name] = append(out[name], c)
		}
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b liveChild) int { return strings.Compare(a.key, b.key) })
	}
	return out
}

// renderedChildren renders the live service as the controller does (its
// migration phase from its status) and returns Kind/name of each child,
// sorted.
func (e *env) renderedChildren(svc *v1alpha2.LLMInferenceService) ([]string, error) {
	if e.catalog == nil {
		var err error
		if e.catalog, err = presets.Catalog(e.sys, "kserve-", nil); err != nil {
			return nil, err
		}
		if e.images, err = presets.Images(); err != nil {
			return nil, err
		}
	}
	opts := engine.Options{SystemNamespace: e.sys, Images: e.images}
	if p := svc.Status.InferencePool; p != nil && p.MigrationPhase != "" {
		opts.Phase = convention.Phase(p.MigrationPhase)
	}
	res, err := engine.Render(context.Background(), svc, e.catalog, opts)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", svc.Name, err)
	}
	names := make([]string, 0, len(res.Objects))
	for _, o := range res.Objects {
		names = append(names, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
	}
	slices.Sort(names)
	return names, nil
}

// childrenMatch checks that the service has exactly the children the
// engine renders for it, each controlled by it.
func (e *env) childrenMatch(name string) error {
	return e.childrenAre(e.service(name), e.liveChildren(name))
}

// childrenAre checks that live are exactly the children the engine renders
// for svc, each controlled by it.
func (e *env) childrenAre(svc *v1alpha2.LLMInferenceService, live []liveChild) error {
	want, err := e.renderedChildren(svc)
	if err != nil {
		return err
	}
	got := make([]string, 0, len(live))
	for _, c := range live {
		if c.owner != svc.UID {
			return fmt.Errorf("%s is owned by %q, not service %s (%s)", c.key, c.owner, svc.Name, svc.UID)
		}
		got = append(got, c.key)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("children of %s:\n got  %v\n want %v", svc.Name, got, want)
	}
	return nil
}

// TestFaultAPIServerRestart: the API server goes away while the
// controller is reconciling new services and comes back on the same etcd;
// right after, one service is deleted and another loses its router.
// Everything converges: each remaining service has exactly the children
// the engine renders, the deleted one leaves nothing the garbage collector
// would not take (envtest runs none: its cluster-scoped binding is gone and
// every namespaced child is controlled by its UID), and steady state sends
// no writes. The test has a control plane of its own, since it stops the
// API server.
func TestFaultAPIServerRestart(t *testing.T) {
	plane := testenv.StartControlPlane(t, controlplane.Options{Restartable: true})
	ctx := context.Background()
	e := &env{t: t, c: plane.Client, rec: &testenv.Recorder{}, cfg: plane.Config, ns: "faults", sys: "faults-system"}
	for _, ns := range []string{e.ns, e.sys} {
		testenv.EnsureNamespace(t, e.c, ns)
	}
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	e.opts = controller.Options{
		Options: engine.Options{SystemNamespace: e.sys}, WatchNamespaces: []string{e.ns}, DisableWebhooks: true,
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", MigrationGracePeriod: time.Hour,
		SyncPeriod: time.Second,
	}
	e.run()

	var names []string
	for i := range 3 {
		pd := e.decode(prefillDecode)
		pd.Name = fmt.Sprintf("pd-%d", i)
		e.must(e.c.Create(ctx, pd))
		sim := e.decode(simService(fmt.Sprintf("sim-%d", i), managedRouter))
		e.must(e.c.Create(ctx, sim))
		names = append(names, pd.Name, sim.Name)
	}
	// Stop as soon as the controller has started writing children, so
	// reconciles are in flight.
	testenv.Eventually(t, "the controller writes", func() error {
		if e.rec.Count() < 3 {
			return fmt.Errorf("%d writes", e.rec.Count())
		}
		return nil
	})
	stopping := time.Now()
	if err := plane.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped, writesWhenStopped := time.Now(), e.rec.Count()
	time.Sleep(3 * time.Second)
	if err := plane.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	t.Logf("the API server took %v to stop, was down %v; the controller tried %d writes meanwhile",
		stopped.Sub(stopping).Round(time.Millisecond), restarted.Sub(stopped).Round(time.Millisecond), e.rec.Count()-writesWhenStopped)

	// Right after: delete one, take the router from another. Healthy is
	// not yet serving every resource: retry until the delete goes through.
	var deleted *v1alpha2.LLMInferenceService
	testenv.Eventually(t, "delete service pd-1", func() error {
		deleted = &v1alpha2.LLMInferenceService{}
		if err := e.c.Get(ctx, clientKey(e.ns, "pd-1"), deleted); err != nil {
			return err
		}
		return e.c.Delete(ctx, deleted)
	})
	e.update("sim-1", func(s *v1alpha2.LLMInferenceService) { s.Spec.Router = nil })
	names = slices.DeleteFunc(names, func(n string) bool { return n == "pd-1" })

	testenv.Eventually(t, "the deleted service is gone", func() error {
		err := e.c.Get(ctx, clientKey(e.ns, "pd-1"), &v1alpha2.LLMInferenceService{})
		if err == nil {
			return fmt.Errorf("still there")
		}
		return client.IgnoreNotFound(err)
	})
	for _, c := range e.liveChildren("pd-1") {
		if strings.HasPrefix(c.key, "ClusterRoleBinding/") || c.owner != deleted.UID {
			t.Errorf("orphan of the deleted service: %s (owner %q)", c.key, c.owner)
		}
	}
	for _, name := range names {
		e.waitReady(name)
		testenv.Eventually(t, "children of "+name, func() error { return e.childrenMatch(name) })
	}
	if got := e.liveChildren("sim-1"); slices.ContainsFunc(got, func(c liveChild) bool { return strings.HasPrefix(c.key, "HTTPRoute/") }) {
		t.Errorf("sim-1 kept its route after losing its router: %v", got)
	}

	converged := time.Now()
	// The children are right on the server now, but an informer whose
	// relist after the restart is still waiting out its back-off holds the
	// old state, and the controller re-sends those writes until it catches
	// up. Catching up must take seconds, not the reflector's 30 s or more
	// (what redial.go is for): wait for writes to stop, then check that
	// they stay stopped.
	settled := e.writesStop(20 * time.Second)
	t.Logf("converged and Ready %v after the restart; writes stopped %v after that",
		converged.Sub(restarted).Round(time.Millisecond), settled.Sub(converged).Round(time.Millisecond))
	e.assertSteadyState()
}

// writesStop waits until the controller sends no write for two seconds,
// for at most limit, and returns when they stopped.
func (e *env) writesStop(limit time.Duration) time.Time {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		last := time.Now()
		before := e.rec.Count()
		time.Sleep(2 * time.Second)
		if e.rec.Count() == before {
			return last
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the controller still writes %v after the children converged: %v", limit, e.rec.Since(before))
		}
	}
}

// decode reads a YAML service into the env's namespace without creating it.
func (e *env) decode(doc string) *v1alpha2.LLMInferenceService {
	e.t.Helper()
	svc := &v1alpha2.LLMInferenceService{}
	if err := yaml.UnmarshalStrict([]byte(doc), svc); err != nil {
		e.t.Fatalf("decode service: %v", err)
	}
	svc.APIVersion, svc.Kind = v1alpha2.GroupVersion.String(), "LLMInferenceService"
	svc.Namespace = e.ns
	return svc
}

// assertSteadyState lets the last events settle, then checks that the
// reconciles of the next seconds (the env's SyncPeriod forces them) send
// no write.
func (e *env) assertSteadyState() {
	e.t.Helper()
	time.Sleep(2 * time.Second)
	before, reconciledBefore := e.rec.Count(), reconciles(e.t)
	time.Sleep(5 * time.Second)
	if writes := e.rec.Since(before); len(writes) > 0 {
		e.t.Errorf("steady state wrote %d times, want 0:\n%v", len(writes), writes)
	}
	if n := reconciles(e.t) - reconciledBefore; n < 6 {
		e.t.Errorf("only %v reconciles during the resyncs; the check proves nothing without them", n)
	} else {
		e.t.Logf("%v reconciles, 0 writes", n)
	}
}
