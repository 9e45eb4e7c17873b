package controllertest

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/internal/migration"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// waitSettled simulates the other controllers until nothing is left for
// the controller to write about the named services: each is Ready at its
// generation (so it saw its workloads, pools and routes as they are) and
// its migration is as far as the live route and pools take it
// (migrationSettled). Ready alone comes first: a service is Ready on its
// v1alpha2 pool while the move to v1 that the gateway's acceptance of the
// v1 pool allows is still to be written, and the move takes two status
// writes (the phase with the reason to move, then GracePeriod). A test
// that counts the writes after convergence starts counting here.
func (e *env) waitSettled(names ...string) {
	e.t.Helper()
	testenv.Eventually(e.t, fmt.Sprintf("services %v are Ready and settled", names), func() error {
		e.simulate()
		for _, name := range names {
			svc := e.service(name)
			c := cond(svc, v1alpha2.ConditionReady)
			if c == nil || c.Status != metav1.ConditionTrue || svc.Status.ObservedGeneration != svc.Generation {
				return fmt.Errorf("service %s: Ready: %+v (generation %d, observed %d)", name, c, svc.Generation, svc.Status.ObservedGeneration)
			}
			if err := e.migrationSettled(svc); err != nil {
				return fmt.Errorf("service %s: %w", name, err)
			}
		}
		return nil
	})
}

// migrationSettled checks that svc's status holds the migration phase,
// reason and message that internal/migration decides from the live route
// (the managed one or the user's) and pools, read as the controller reads them: a reconcile now would
// write nothing about the migration.
func (e *env) migrationSettled(svc *v1alpha2.LLMInferenceService) error {
	ctx := context.Background()
	if err := e.loadPresets(); err != nil {
		return err
	}
	plan, err := engine.Prepare(ctx, svc, e.catalog, engine.Options{SystemNamespace: e.sys, Images: e.images})
	if err != nil {
		return err
	}
	if rt := plan.Shape.Router; rt == nil || rt.Scheduler == nil {
		return nil
	}
	in := migration.Input{Service: svc, Now: time.Now(), Grace: e.opts.MigrationGracePeriod}
	if in.V1Served, err = e.crdEstablished(v1PoolCRD); err != nil {
		return err
	}
	if in.Alpha2Served, err = e.crdEstablished(alpha2PoolCRD); err != nil {
		return err
	}
	in.Pool = plan.Names.Pool
	if http := plan.Shape.Router.Route; http != nil && http.HTTP != nil && len(http.HTTP.Refs) > 0 {
		for _, ref := range http.HTTP.Refs {
			rr := migration.RouteRef{Name: ref.Name}
			rt := &gatewayv1.HTTPRoute{}
			if found, err := e.getOptional(ref.Name, rt); err != nil {
				return err
			} else if found {
				rr.Route = rt
			}
			in.RouteRefs = append(in.RouteRefs, rr)
		}
	} else {
		rt := &gatewayv1.HTTPRoute{}
		if found, err := e.getOptional(plan.Names.Route, rt); err != nil {
			return err
		} else if found {
			in.Route = rt
		}
	}
	if in.V1Served {
		pool := &gieapiv1.InferencePool{}
		if found, err := e.getOptional(plan.Names.Pool, pool); err != nil {
			return err
		} else if found {
			in.PoolV1 = pool
		}
	}
	if in.Alpha2Served {
		pool := &gieapixv1alpha2.InferencePool{}
		if found, err := e.getOptional(plan.Names.Pool, pool); err != nil {
			return err
		} else if found {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pool)
			if err != nil {
				return err
			}
			in.PoolAlpha2 = &unstructured.Unstructured{Object: m}
		}
	}
	d := migration.Decide(in)
	var phase string
	if p := svc.Status.InferencePool; p != nil {
		phase = p.MigrationPhase
	}
	c := cond(svc, migration.ConditionMigrated)
	switch {
	case phase != string(d.Phase):
		return fmt.Errorf("migration phase %q, the route and pools make it %s (%s)", phase, d.Phase, d.Reason)
	case c == nil || c.Reason != d.Reason || c.Message != d.Message:
		return fmt.Errorf("condition %s %+v, the route and pools make it %s: %s", migration.ConditionMigrated, c, d.Reason, d.Message)
	}
	return nil
}

// alpha2PoolCRD is the v1alpha2 InferencePool CRD.
const alpha2PoolCRD = "inferencepools.inference.networking.x-k8s.io"

// crdEstablished reports whether the CRD name is installed and established.
func (e *env) crdEstablished(name string) (bool, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: name}, crd); apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue, nil
		}
	}
	return false, nil
}

// getOptional reads the test namespace's object name into obj and reports
// whether it exists.
func (e *env) getOptional(name string, obj client.Object) (bool, error) {
	err := e.c.Get(context.Background(), clientKey(e.ns, name), obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
