package controllertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// installCRD creates crd (when missing) and waits until it is established.
func installCRD(tb testing.TB, crd *apiextensionsv1.CustomResourceDefinition) {
	tb.Helper()
	ctx := context.Background()
	if err := cp.Client.Create(ctx, crd.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatalf("create CRD %s: %v", crd.Name, err)
	}
	testenv.Eventually(tb, "CRD "+crd.Name+" is established", func() error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not established: %v", got.Status.Conditions)
	})
}

// discoveryLag answers the first n discovery requests for gv, once armed,
// with 404 Not Found: an API server lists a new CRD's group version some
// time after the CRD is established, and a REST mapper that asks in
// between finds no kind.
type discoveryLag struct {
	*apiFault
	left int // under apiFault.mu
}

func newDiscoveryLag(gv string) *discoveryLag {
	d := &discoveryLag{}
	d.apiFault = &apiFault{code: http.StatusNotFound, reason: metav1.StatusReasonNotFound, pick: func(req *http.Request) bool {
		if req.URL.Path != "/apis/"+gv || d.left == 0 {
			return false
		}
		d.left--
		return true
	}}
	return d
}

// arm hides the group version from the next n discovery requests.
func (d *discoveryLag) arm(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.left = n
}

// removeCRD deletes the one CRD of an api/crds set from the shared control
// plane until the test ends, and returns it.
func removeCRD(t *testing.T, set string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	loaded, err := crds.Load(set)
	if err != nil || len(loaded) != 1 {
		t.Fatalf("load the CRD of %s: %v", set, err)
	}
	deleteCRD(t, loaded[0])
	return loaded[0]
}

// removeCRDNamed is removeCRD for the CRD name of a set of several.
func removeCRDNamed(t *testing.T, set, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	loaded, err := crds.Load(set)
	if err != nil {
		t.Fatalf("load the CRDs of %s: %v", set, err)
	}
	for _, crd := range loaded {
		if crd.Name == name {
			deleteCRD(t, crd)
			return crd
		}
	}
	t.Fatalf("%s has no CRD %s", set, name)
	return nil
}

// deleteCRD deletes crd until the test ends, and waits until discovery
// no longer serves it.
func deleteCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { installCRD(t, crd) })
	if err := cp.Client.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.Name}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "CRD "+crd.Name+" is gone", func() error {
		err := cp.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
	// Discovery goes on serving a deleted CRD's versions for a moment; a
	// controller started in it would map the kind and never ask again.
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		gv := crd.Spec.Group + "/" + v.Name
		testenv.Eventually(t, "discovery no longer serves "+crd.Spec.Names.Plural+" in "+gv, func() error {
			list, err := dc.ServerResourcesForGroupVersion(gv)
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return fmt.Errorf("discovery: %w", err)
			}
			for _, r := range list.APIResources {
				if r.Name == crd.Spec.Names.Plural {
					return errors.New("still served")
				}
			}
			return nil // other CRDs serve the group version
		})
	}
}

// TestCRDAppearsAfterStart removes the LeaderWorkerSet CRD, starts the
// controller, and installs the CRD again: a multi-node service waits with a
// clear condition, the controller keeps serving other services, and the
// LeaderWorkerSet watch starts with no restart.
//
// The controller's discovery does not list the LeaderWorkerSet group
// version for a few requests after the CRD is back, as on a loaded API
// server: the watch must still start, with its index, and the service must
// not keep a stale CRDMissing. It did until a restart: the first try to
// enable the kind failed, the retry found it marked watched and added
// neither index nor watch, and every reconcile failed listing
// LeaderWorkerSets, backing off towards 1,000 s.
func TestCRDAppearsAfterStart(t *testing.T) {
	crd := removeCRD(t, crds.LWS)

	t.Logf("%s the LWS CRD is gone", time.Now().Format(time.StampMilli))
	lag := newDiscoveryLag(lwsv1.GroupVersion.String())
	e := newEnv(t, func(o *controller.Options) { o.SyncPeriod = time.Second })
	e.wrap = lag.wrap
	e.run()
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	e.create(`
metadata:
  name: mn
spec:
  model:
    uri: hf://deepseek-ai/DeepSeek-R1-0528
  parallelism:
    pipeline: 2
  worker: {}
  router:
    route: {}
    gateway: {}
    scheduler: {}
`)
	e.create(simulator)
	svc := e.waitCondition("mn", v1alpha2.ConditionWorkloadsReady, metav1.ConditionFalse, "CRDMissing")
	if msg := cond(svc, v1alpha2.ConditionWorkloadsReady).Message; !strings.Contains(msg, crd.Name) {
		t.Errorf("WorkloadsReady message %q does not name %s", msg, crd.Name)
	}
	if c := cond(svc, v1alpha2.ConditionReady); c.Reason != "CRDMissing" {
		t.Errorf("Ready reason %s, want CRDMissing", c.Reason)
	}
	if e.exists(service(), "mn-kserve-workload-svc") || e.exists(route(), "mn-kserve-route") {
		t.Error("children were applied for a service whose CRD is missing")
	}
	// The controller goes on with what it can do.
	testenv.Eventually(t, "service sim is Ready", func() error {
		e.simulateRoutes()
		e.simulatePools()
		if c := cond(e.service("sim"), v1alpha2.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready %+v", c)
		}
		return nil
	})

	t.Logf("%s installing the LWS CRD", time.Now().Format(time.StampMilli))
	lag.arm(3)
	installCRD(t, crd)
	t.Logf("%s the LWS CRD is back", time.Now().Format(time.StampMilli))
	e.waitExists(lws, "mn-kserve-mn")
	t.Logf("%s the LeaderWorkerSet exists", time.Now().Format(time.StampMilli))
	e.waitReady("mn") // LeaderWorkerSet status events arrive through the new watch
	if lag.count() == 0 {
		t.Error("no discovery request for the LeaderWorkerSet group was answered 404; the test did not make discovery lag")
	}
	e.assertSteadyState()
}

// requestCounter counts the requests whose path starts with prefix, and
// the watches among them.
type requestCounter struct {
	prefix     string
	mu         sync.Mutex
	n, watched int
}

func (c *requestCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *requestCounter) watches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watched
}

func (c *requestCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if strings.HasPrefix(req.URL.Path, c.prefix) {
			c.mu.Lock()
			c.n++
			if req.URL.Query().Get("watch") == "true" {
				c.watched++
			}
			c.mu.Unlock()
		}
		return next.RoundTrip(req)
	})
}

// TestPoolCRDsComeAndGo: started with no InferencePool CRD, the controller
// says on the service which CRDs to install; once they are, the pools,
// endpoint picker and route appear with no restart; when the v1alpha2 CRD is
// removed, the service moves to v1 (retired: no v1alpha2 pool can exist),
// and then the controller sends no request for the removed kind and
// writes nothing: no error loop. When the v1alpha2 CRD comes back, its
// kind is watched again.
//
// A service created while only the v1 CRD is established goes to retired
// at once (migration.Decide: no v1alpha2 pool can exist) and stays there,
// so the test installs the v1alpha2 CRD first.
func TestPoolCRDsComeAndGo(t *testing.T) {
	v1 := removeCRDNamed(t, crds.GIE, v1PoolCRD)
	alpha2 := removeCRDNamed(t, crds.GIE, alpha2PoolCRD)

	alpha2Requests := &requestCounter{prefix: "/apis/inference.networking.x-k8s.io/"}
	e := newEnv(t)
	e.wrap = alpha2Requests.wrap
	e.run()
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	e.create(simService("sim", managedRouter))
	svc := e.waitCondition("sim", v1alpha2.ConditionRouterReady, metav1.ConditionFalse, "CRDMissing")
	msg := cond(svc, v1alpha2.ConditionRouterReady).Message
	for _, crd := range []string{v1.Name, alpha2.Name} {
		if !strings.Contains(msg, "the CustomResourceDefinition "+crd) {
			t.Errorf("RouterReady message %q does not name %s", msg, crd)
		}
	}
	if e.exists(route(), "sim-kserve-route") || e.exists(deployment(), "sim-kserve-router-scheduler") {
		t.Error("router children were applied while the InferencePool CRDs are missing")
	}

	// The v1alpha2 CRD first: with only v1 served, a new service goes
	// straight to retired (no v1alpha2 pool can exist), and would never
	// get one.
	installCRD(t, alpha2)
	e.waitExists(poolAlpha2, "sim-inference-pool")
	installCRD(t, v1)
	e.waitExists(poolV1, "sim-inference-pool")
	e.waitExists(poolAlpha2, "sim-inference-pool")
	e.waitExists(route, "sim-kserve-route")
	e.waitExists(deployment, "sim-kserve-router-scheduler")
	e.waitReady("sim")

	// The v1alpha2 CRD goes: its pools go with it.
	e.must(cp.Client.Delete(context.Background(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: alpha2.Name}}))
	testenv.Eventually(t, "service sim is retired and Ready", func() error {
		e.simulate()
		svc := e.service("sim")
		if ip := svc.Status.InferencePool; ip == nil || ip.MigrationPhase != string(convention.PhaseRetired) {
			return fmt.Errorf("status.inferencePool %+v", ip)
		}
		if c := cond(svc, v1alpha2.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || svc.Status.ObservedGeneration != svc.Generation {
			return fmt.Errorf("Ready %+v", c)
		}
		return nil
	})
	e.waitSettled("sim")
	// No error loop: over a few seconds, no write, no failed reconcile and
	// no request for the removed kind.
	errorsBefore, requestsBefore, writesBefore := reconcileErrors(t), alpha2Requests.count(), e.rec.Count()
	time.Sleep(5 * time.Second)
	if n := reconcileErrors(t) - errorsBefore; n != 0 {
		t.Errorf("%v reconciles failed after the v1alpha2 CRD went, want 0", n)
	}
	if n := alpha2Requests.count() - requestsBefore; n != 0 {
		t.Errorf("%d requests for inference.networking.x-k8s.io after the v1alpha2 CRD went, want 0", n)
	}
	if w := e.rec.Writes(writesBefore); len(w) != 0 {
		t.Errorf("%d writes after the service settled, want 0: %v", len(w), w)
	}

	// The v1alpha2 CRD comes back: its kind is watched afresh (the steps
	// of the first enable are not taken for done), and a new service
	// settles with no failed reconcile, while sim stays retired.
	errorsBefore = reconcileErrors(t)
	watches := alpha2Requests.watches()
	installCRD(t, alpha2)
	testenv.Eventually(t, "the controller watches v1alpha2 InferencePools again", func() error {
		if alpha2Requests.watches() == watches {
			return errors.New("no watch yet")
		}
		return nil
	})
	e.create(simService("late", managedRouter))
	e.waitSettled("sim", "late")
	if ip := e.service("sim").Status.InferencePool; ip == nil || ip.MigrationPhase != string(convention.PhaseRetired) {
		t.Errorf("sim: status.inferencePool %+v, want retired for good", ip)
	}
	if n := reconcileErrors(t) - errorsBefore; n != 0 {
		t.Errorf("%v reconciles failed after the v1alpha2 CRD came back, want 0", n)
	}
}
