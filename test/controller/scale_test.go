package controllertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// concurrentServices is how many services TestConcurrentReconciles runs:
// two for each of its 8 workers. scaleServices is how many
// BenchmarkScaleConcurrentReconciles runs.
const (
	concurrentServices = 16
	scaleServices      = 200
)

// TestConcurrentReconciles: with 8 workers, 16 services (half single-node
// CPU simulators, half prefill/decode, all with a managed router) each get
// exactly the children the engine renders, become Ready once their pods
// run on the cluster's nodes (and the gateway's status is simulated), and
// then a reconcile of every one of them sends no write.
// BenchmarkScaleConcurrentReconciles does the same with 200 services and
// reports how long it takes.
func TestConcurrentReconciles(t *testing.T) {
	concurrentReconciles(t, concurrentServices)
}

// BenchmarkScaleConcurrentReconciles is TestConcurrentReconciles with 200
// services and 600 pods on the cluster (test/kwokcluster). It reports the
// time from the first create until every service is created
// (s-to-create), has every child the engine renders (s-to-children) and is
// Ready (s-to-ready), the controller's writes per service until it
// settled (writes/service), and fails if the reconciles of every service
// after that write anything. Run it with `make bench-controller`, or alone
// with -bench '^BenchmarkScaleConcurrentReconciles$' -benchtime 1x.
func BenchmarkScaleConcurrentReconciles(b *testing.B) {
	for range b.N {
		r := concurrentReconciles(b, scaleServices)
		b.ReportMetric(r.created.Seconds(), "s-to-create")
		b.ReportMetric(r.children.Seconds(), "s-to-children")
		b.ReportMetric(r.ready.Seconds(), "s-to-ready")
		b.ReportMetric(float64(r.writes)/scaleServices, "writes/service")
	}
}

// scaleTimes are concurrentReconciles' times from its first create, and
// the controller's writes until it settled.
type scaleTimes struct {
	created, children, ready time.Duration
	writes                   int
}

// concurrentReconciles runs n services with 8 workers until every one is
// Ready, then reconciles each once more and fails on any write.
func concurrentReconciles(tb testing.TB, n int) scaleTimes {
	tb.Helper()
	ctx := context.Background()
	began := time.Now()
	e := newEnv(tb, func(o *controller.Options) { o.MaxConcurrentReconciles = 8 })
	if n > concurrentServices {
		// 200 services' 600 pods would fill the GPU nodes' pod slots (110
		// each) for what runs after: cleaned up once the controller
		// stopped. The test's 16 services' pods stay, as every test's do.
		testenv.DeleteNamespaceAtEnd(tb, e.c, e.ns, 3*time.Minute)
	}
	e.run()
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	names := make([]string, n)
	forEach(tb, n, func(i int) error {
		doc, name := simService("", managedRouter), fmt.Sprintf("sim-%03d", i)
		if i%2 == 1 {
			doc, name = prefillDecode, fmt.Sprintf("pd-%03d", i)
		}
		svc := e.decode(doc)
		svc.Name = name
		names[i] = name
		if err := e.c.Create(ctx, svc); err != nil {
			return fmt.Errorf("create service %s: %w", name, err)
		}
		return nil
	})
	var r scaleTimes
	r.created = time.Since(began)

	// Listing every child of every service is heavy for the API server,
	// which the controller needs too: with 200 services, once a second.
	pause := time.Duration(n) * 5 * time.Millisecond
	// The cluster's controllers make the services' pods meanwhile (and
	// write about as much again as the controller): 5 minutes for 200
	// services at a load of 15 on two cores took up to 2.5 each.
	testenv.Within(tb, 5*time.Minute, "every service has the children the engine renders", func() error {
		err := e.allChildrenMatch()
		if err != nil {
			time.Sleep(pause)
		}
		return err
	})
	r.children = time.Since(began)

	testenv.Within(tb, 5*time.Minute, "every service is Ready", func() error {
		e.simulate()
		err := e.allReady()
		if err != nil {
			time.Sleep(pause)
		}
		return err
	})
	r.ready = time.Since(began)

	// Settled: every service is touched (an annotation the engine does not
	// propagate) and so reconciled once more, until a round of these
	// reconciles writes nothing; then one more round may not write either.
	settling, rounds := time.Now(), 0
	for before := e.rec.Count(); ; before = e.rec.Count() {
		rounds++
		e.touchRound(names)
		if e.rec.Count() == before {
			break
		}
		if time.Since(settling) > 2*time.Minute {
			tb.Fatalf("the controller still writes after %d rounds of reconciles: %v", rounds, e.rec.Since(before))
		}
	}
	before, reconciledBefore := e.rec.Count(), reconciles(tb)
	r.writes = before
	e.touchRound(names)
	if writes := e.rec.Since(before); len(writes) > 0 {
		tb.Errorf("steady state wrote %d times over %v reconciles, want 0:\n%v", len(writes), reconciles(tb)-reconciledBefore, writes)
	}
	tb.Logf("%d services: created in %v, children in %v, Ready in %v, settled in %d rounds of reconciles; %d writes by the controller; %v reconciles in steady state, 0 writes",
		n, r.created.Round(time.Millisecond), r.children.Round(time.Millisecond), r.ready.Round(time.Millisecond), rounds, before, reconciles(tb)-reconciledBefore)
	return r
}

// allChildrenMatch checks every service in the env's namespace against
// the engine's render.
func (e *env) allChildrenMatch() error {
	e.t.Helper()
	list := &v1alpha2.LLMInferenceServiceList{}
	e.must(e.c.List(context.Background(), list, client.InNamespace(e.ns)))
	live := e.children(nil)
	var errs []error
	for i := range list.Items {
		if err := e.childrenAre(&list.Items[i], live[list.Items[i].Name]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d services differ; the first: %w", len(errs), len(list.Items), errs[0])
	}
	return nil
}

// allReady checks that every service in the env's namespace is Ready for
// its generation.
func (e *env) allReady() error {
	e.t.Helper()
	list := &v1alpha2.LLMInferenceServiceList{}
	e.must(e.c.List(context.Background(), list, client.InNamespace(e.ns)))
	var errs []error
	for i := range list.Items {
		svc := &list.Items[i]
		if c := cond(svc, v1alpha2.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || svc.Status.ObservedGeneration != svc.Generation {
			errs = append(errs, fmt.Errorf("service %s Ready: %+v (generation %d, observed %d)", svc.Name, c, svc.Generation, svc.Status.ObservedGeneration))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d services not Ready; the first: %w", len(errs), len(list.Items), errs[0])
	}
	return nil
}

// touchRound touches each named service and waits until every one has
// been reconciled since: a reconcile begun after the touches began and
// ended without error. In steady state nothing else reconciles a service,
// so that reconcile is the one its touch caused.
func (e *env) touchRound(names []string) {
	e.t.Helper()
	mark := reconciled.mark()
	touch(e.t, e.c, e.ns, names)
	testenv.Within(e.t, time.Minute, "every service is reconciled again", func() error {
		return reconciled.atLeast(1, mark, e.ns, names)
	})
}

// touch sets an annotation the engine does not propagate on each named
// service, which reconciles it without changing what it renders.
func touch(tb testing.TB, c client.Client, namespace string, names []string) {
	tb.Helper()
	stamp := time.Now().Format(time.RFC3339Nano)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"test.odh-serving.opendatahub.io/touch":%q}}}`, stamp)
	forEach(tb, len(names), func(i int) error {
		svc := &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: names[i]}}
		if err := c.Patch(context.Background(), svc, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("touch service %s: %w", names[i], err)
		}
		return nil
	})
}
