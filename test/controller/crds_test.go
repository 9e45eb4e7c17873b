package controllertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
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

// TestCRDAppearsAfterStart removes the LeaderWorkerSet CRD, starts the
// controller, and installs the CRD again: a multi-node service waits with a
// clear condition, the controller keeps serving other services, and the
// LeaderWorkerSet watch starts with no restart.
func TestCRDAppearsAfterStart(t *testing.T) {
	ctx := context.Background()
	loaded, err := crds.Load(crds.LWS)
	if err != nil || len(loaded) != 1 {
		t.Fatalf("load the LWS CRD: %v", err)
	}
	crd := loaded[0]
	t.Cleanup(func() { installCRD(t, crd) })
	if err := cp.Client.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.Name}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the LWS CRD is gone", func() error {
		err := cp.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})

	t.Logf("%s the LWS CRD is gone", time.Now().Format(time.StampMilli))
	e := startWithGateway(t)
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
	installCRD(t, crd)
	t.Logf("%s the LWS CRD is back", time.Now().Format(time.StampMilli))
	e.waitExists(lws, "mn-kserve-mn")
	t.Logf("%s the LeaderWorkerSet exists", time.Now().Format(time.StampMilli))
	e.waitReady("mn") // LeaderWorkerSet status events arrive through the new watch
}
