package controllertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
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
	ctx := context.Background()
	loaded, err := crds.Load(set)
	if err != nil || len(loaded) != 1 {
		t.Fatalf("load the CRD of %s: %v", set, err)
	}
	crd := loaded[0]
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
		testenv.Eventually(t, "discovery no longer serves "+gv, func() error {
			switch _, err := dc.ServerResourcesForGroupVersion(gv); {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return fmt.Errorf("discovery: %w", err)
			}
			return errors.New("still served")
		})
	}
	return crd
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
		e.simulateWorkloads(false)
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
