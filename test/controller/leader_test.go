package controllertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/internal/crdlifecycle"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// leaseWrites counts the writes to the leader election Lease: a replica
// that leads, or takes the lead, makes them.
func leaseWrites(r *testenv.Recorder) int {
	n := 0
	for _, w := range r.Since(0) {
		if strings.Contains(w, "/leases/"+controller.LeaderElectionID) {
			n++
		}
	}
	return n
}

// runReplica runs another controller with opts whose client's requests go
// through counter, and then through lease, which counts its requests for
// the leader election Lease; the returned stop ends it.
func runReplica(t *testing.T, opts controller.Options, counter *testenv.Recorder, lease *requestCounter) (stop func()) {
	t.Helper()
	cfg := counter.Config(cp.Config)
	cfg.Wrap(lease.wrap)
	return testenv.Start(t, "replica", func(ctx context.Context) error { return controller.Run(ctx, cfg, opts) })
}

// leaseRequests counts the requests for the leader election Lease in the
// system namespace sys.
func leaseRequests(sys string) *requestCounter {
	return &requestCounter{prefix: "/apis/coordination.k8s.io/v1/namespaces/" + sys + "/leases/" + controller.LeaderElectionID}
}

// crdApplies reads odh_serving_crd_applies_total, summed by result.
func crdApplies(t *testing.T) map[string]float64 {
	t.Helper()
	return counterBy(t, "odh_serving_crd_applies_total", "result")
}

// TestStandbySendsNoWrite runs two replicas with leader election and the
// CRD lifecycle, as the chart does with two replicas. While the first
// leads, the second sends no write at all: it only reads (the Lease among
// others). When the leader stops, the second takes over; with nothing
// changed it sends no CRD write and, the service having converged, no
// write but the Lease's (and the event that says it leads).
func TestStandbySendsNoWrite(t *testing.T) {
	// Every embedded CRD is as the lifecycle applies it, the v1alpha2
	// pool's included (the service keeps it needed for the grace period).
	if _, err := crdlifecycle.Apply(t.Context(), cp.Client, crdlifecycle.ApplyOptions{Alpha2: true}); err != nil {
		t.Fatal(err)
	}
	e := startWithGateway(t, func(o *controller.Options) {
		// The resyncs reconcile the service, so that the new leader's
		// reconciles can be waited for (waitReconciles).
		o.LeaderElect, o.ManageCRDs, o.SyncPeriod = true, true, time.Second
	})
	e.create(simulator)
	e.waitReady("sim")

	// Someone takes a label off one of our CRDs: a replica that ran the
	// CRD lifecycle now would write it back.
	setCRDLabel(t, v1PoolCRD, "")

	standby, lease := &testenv.Recorder{}, leaseRequests(e.sys)
	stopStandby := runReplica(t, e.opts, standby, lease)
	// The standby has started when it reads the Lease. It tries to take
	// the Lease every retry period (2 s, jittered); it must write nothing
	// through two tries and a change to the service to act on.
	testenv.Eventually(t, "the standby reads the Lease", func() error {
		if lease.count() == 0 {
			return fmt.Errorf("no read yet: %v", standby.Verbs())
		}
		return nil
	})
	e.update("sim", func(s *v1alpha2.LLMInferenceService) { s.Spec.Replicas = ptr(int32(2)) })
	// Settled, not only Ready: the new leader must find nothing to do.
	e.waitSettled("sim")
	testenv.Eventually(t, "the standby tries to take the Lease twice", func() error {
		if n := lease.count(); n < 2 {
			return fmt.Errorf("%d tries", n)
		}
		return nil
	})
	counts, writes := standby.Verbs(), standby.Since(0)
	t.Logf("standby's requests by verb while the other replica led: %v", counts)
	if len(writes) != 0 {
		t.Errorf("the standby sent %d writes while the other replica led: %v", len(writes), writes)
	}

	// The label is back: nothing differs from what the lifecycle applies.
	// The leader stops and releases the Lease; the standby takes over.
	setCRDLabel(t, v1PoolCRD, convention.ManagedBy)
	before := crdApplies(t)
	e.stop()
	mark := reconciled.mark()
	testenv.Eventually(t, "the standby takes the Lease", func() error {
		if leaseWrites(standby) == 0 {
			return fmt.Errorf("no Lease write yet")
		}
		return nil
	})
	want, err := crdlifecycle.GIECRDs()
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the new leader runs the CRD lifecycle", func() error {
		after := crdApplies(t)
		done := 0.0
		for result, n := range after {
			done += n - before[result]
		}
		if int(done) < len(want) {
			return fmt.Errorf("%v of %d CRDs reported: before %v, after %v", done, len(want), before, after)
		}
		return nil
	})
	after := crdApplies(t)
	if d := after["applied"] - before["applied"]; d != 0 {
		t.Errorf("the new leader applied %v CRDs that had not changed", d)
	}
	if d := after["error"] - before["error"]; d != 0 {
		t.Errorf("the CRD lifecycle failed %v times", d)
	}
	e.waitReady("sim")
	e.waitReconciles(mark)
	stopStandby()
	counts, writes = standby.Verbs(), standby.Since(0)
	t.Logf("its requests by verb after taking over: %v", counts)
	for _, w := range writes {
		if strings.Contains(w, "customresourcedefinitions") {
			t.Errorf("the new leader wrote a CRD that had not changed: %s", w)
		} else if !strings.Contains(w, "/leases/") && !strings.HasSuffix(w, "/namespaces/"+e.sys+"/events") {
			t.Errorf("the new leader wrote to a converged service's objects: %s", w)
		}
	}
}

// TestCRDApplyThenCompareUnchanged: right after Apply, comparing again
// finds every embedded CRD as ours, so a second Apply reports each one
// Unchanged and writes nothing.
func TestCRDApplyThenCompareUnchanged(t *testing.T) {
	ctx := t.Context()
	c, counter := testenv.RecordingClient(t, cp.Config, cp.Scheme)
	if _, err := crdlifecycle.Apply(ctx, c, crdlifecycle.ApplyOptions{Alpha2: true}); err != nil {
		t.Fatal(err)
	}
	before := counter.Count()
	report, err := crdlifecycle.Apply(ctx, c, crdlifecycle.ApplyOptions{Alpha2: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := crdlifecycle.GIECRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Results) != len(want) {
		t.Fatalf("%d results for %d embedded CRDs:\n%s", len(report.Results), len(want), report)
	}
	for i, res := range report.Results {
		if res.Name != want[i].Name || res.Action != crdlifecycle.ActionUnchanged {
			t.Errorf("%s: %s (%s), want %s Unchanged", res.Name, res.Action, res.Reason, want[i].Name)
		}
	}
	if after := counter.Since(before); len(after) != 0 {
		t.Errorf("the second Apply wrote: %v", after)
	}
}

// v1PoolCRD is the v1 InferencePool CRD, one the CRD lifecycle applies.
const v1PoolCRD = "inferencepools.inference.networking.k8s.io"

// setCRDLabel sets the managed-by label of a CRD to value, or removes it
// when value is empty, as another tool might.
func setCRDLabel(t *testing.T, name, value string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := cp.Client.Get(t.Context(), client.ObjectKey{Name: name}, crd); err != nil {
			return err
		}
		if value == "" {
			delete(crd.Labels, convention.LabelManagedBy)
		} else {
			metav1.SetMetaDataLabel(&crd.ObjectMeta, convention.LabelManagedBy, value)
		}
		return cp.Client.Update(t.Context(), crd)
	})
	if err != nil {
		t.Fatalf("label CRD %s: %v", name, err)
	}
}

// TestRestartWritesNothing restarts a lone replica (no leader election)
// with the CRD lifecycle on: when nothing changed, the new process reports
// every CRD without an apply and sends no write at all.
func TestRestartWritesNothing(t *testing.T) {
	if _, err := crdlifecycle.Apply(t.Context(), cp.Client, crdlifecycle.ApplyOptions{Alpha2: true}); err != nil {
		t.Fatal(err)
	}
	e := startWithGateway(t, func(o *controller.Options) {
		// The resyncs reconcile the service, so that the restarted
		// replica's reconciles can be waited for (waitReconciles).
		o.ManageCRDs, o.SyncPeriod = true, time.Second
	})
	e.create(simulator)
	// Not waitReady: the service is Ready on its v1alpha2 pool before the
	// first replica has written its move to v1, which a replica stopped
	// then leaves to the next (1 run in 5 under load).
	e.waitSettled("sim")
	e.stop()

	want, err := crdlifecycle.GIECRDs()
	if err != nil {
		t.Fatal(err)
	}
	before := crdApplies(t)
	e.rec = &testenv.Recorder{}
	mark := reconciled.mark()
	e.run()
	testenv.Eventually(t, "the restarted replica runs the CRD lifecycle", func() error {
		done := 0.0
		for result, n := range crdApplies(t) {
			done += n - before[result]
		}
		if int(done) < len(want) {
			return fmt.Errorf("%v of %d CRDs reported", done, len(want))
		}
		return nil
	})
	if d := crdApplies(t)["applied"] - before["applied"]; d != 0 {
		t.Errorf("the restarted replica applied %v CRDs that had not changed", d)
	}
	e.waitReady("sim")
	e.waitReconciles(mark)
	e.stop()
	t.Logf("the restarted replica's requests by verb: %v", e.rec.Verbs())
	if writes := e.rec.Writes(0); len(writes) != 0 {
		t.Errorf("the restarted replica sent %d writes:", len(writes))
		for _, w := range writes {
			t.Errorf("%s (answered %d) %s", w, w.Code, w.Body)
		}
	}
}
