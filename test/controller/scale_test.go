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

// scaleServices is how many services TestScaleConcurrentReconciles runs.
const scaleServices = 200

// TestScaleConcurrentReconciles: with 8 workers, 200 services (half
// single-node CPU simulators, half prefill/decode, all with a managed
// router) each get exactly the children the engine renders, become Ready
// once their 600 pods run on the cluster's nodes (and the gateway's and the
// LeaderWorkerSets' statuses are simulated), and then a reconcile of every
// one of them sends no write.
func TestScaleConcurrentReconciles(t *testing.T) {
	ctx := context.Background()
	began := time.Now()
	e := newEnv(t, func(o *controller.Options) { o.MaxConcurrentReconciles = 8 })
	// The services' 600 pods would fill the GPU nodes' pod slots (110
	// each) for the tests after this one. Cleaned up once the controller
	// stopped.
	testenv.DeleteNamespaceAtEnd(t, e.c, e.ns, 3*time.Minute)
	e.run()
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	names := make([]string, scaleServices)
	forEach(t, scaleServices, func(i int) error {
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
	created := time.Since(began)

	// The cluster's controllers make the services' 600 pods meanwhile (and
	// write about as much again as the controller): 5 minutes at a load of
	// 15 on two cores took up to 2.5 each.
	testenv.Within(t, 5*time.Minute, "every service has the children the engine renders", func() error {
		err := e.allChildrenMatch()
		if err != nil {
			time.Sleep(time.Second) // as below
		}
		return err
	})
	converged := time.Since(began)

	testenv.Within(t, 5*time.Minute, "every service is Ready", func() error {
		e.simulate()
		err := e.allReady()
		if err != nil {
			// Listing every child of 200 services is heavy for the API
			// server, which the controller needs too: once a second.
			time.Sleep(time.Second)
		}
		return err
	})
	ready := time.Since(began)

	// Settled: no write for 3 seconds. Then every service is touched (an
	// annotation the engine does not propagate) and so reconciled once
	// more; none of that may write.
	e.waitQuiet(3 * time.Second)
	before, reconciledBefore := e.rec.Count(), reconciles(t)
	touch(t, e.c, e.ns, names)
	testenv.Within(t, time.Minute, "every service is reconciled again", func() error {
		if n := reconciles(t) - reconciledBefore; n < scaleServices {
			return fmt.Errorf("%v reconciles", n)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	if writes := e.rec.Since(before); len(writes) > 0 {
		t.Errorf("steady state wrote %d times over %v reconciles, want 0:\n%v", len(writes), reconciles(t)-reconciledBefore, writes)
	}
	t.Logf("%d services: created in %v, children in %v, Ready in %v; %d writes by the controller; %v reconciles in steady state, 0 writes",
		scaleServices, created.Round(time.Millisecond), converged.Round(time.Millisecond), ready.Round(time.Millisecond), before, reconciles(t)-reconciledBefore)
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

// waitQuiet waits until the controller has sent no write for quiet.
func (e *env) waitQuiet(quiet time.Duration) {
	e.t.Helper()
	last, since := e.rec.Count(), time.Now()
	testenv.Within(e.t, 2*time.Minute, "the controller stops writing", func() error {
		if c := e.rec.Count(); c != last {
			last, since = c, time.Now()
		}
		if time.Since(since) < quiet {
			return fmt.Errorf("wrote %v ago", time.Since(since).Round(time.Millisecond))
		}
		return nil
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
