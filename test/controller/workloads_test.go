package controllertest

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func lws() client.Object { return &lwsv1.LeaderWorkerSet{} }

// multiNode is data parallel across nodes for decode and prefill.
const multiNode = `
metadata:
  name: mn
spec:
  model:
    uri: hf://deepseek-ai/DeepSeek-R1-0528
  parallelism:
    data: 4
    dataLocal: 2
  worker: {}
  prefill:
    parallelism:
      data: 2
      dataLocal: 2
    worker: {}
  router:
    route: {}
    gateway: {}
    scheduler: {}
`

// TestMultiNodeAndPrefill adds and removes the worker and the prefill
// workload and checks the objects, their labels and RBAC follow (reference
// §4.3), and that LeaderWorkerSet status drives readiness: the decode
// leader's readiness probe fails at first (kwok's NeverReady image), so the
// LeaderWorkerSet operator does not report it available until the image is
// a good one.
func TestMultiNodeAndPrefill(t *testing.T) {
	e := startWithGateway(t)
	e.create(multiNode + `  template:
    containers:
    - name: main
      image: ` + kwokcluster.NeverReady + "\n")
	e.waitExists(lws, "mn-kserve-mn", "mn-kserve-mn-prefill")
	e.waitExists(serviceAccount, "mn-kserve-mn", "mn-kserve-mn-prefill")
	e.waitExists(role, "mn-kserve-mn-role")
	e.waitExists(roleBinding, "mn-kserve-mn-rb")
	ctx := context.Background()
	for _, c := range []struct {
		obj       client.Object
		name      string
		component string
	}{
		{&lwsv1.LeaderWorkerSet{}, "mn-kserve-mn", "llminferenceservice-workload"},
		{&lwsv1.LeaderWorkerSet{}, "mn-kserve-mn-prefill", "llminferenceservice-workload-prefill"},
	} {
		e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: c.name}, c.obj))
		l := c.obj.GetLabels()
		if l["app.kubernetes.io/part-of"] != "llminferenceservice" || l["app.kubernetes.io/name"] != "mn" || l["app.kubernetes.io/component"] != c.component {
			t.Errorf("%s labels = %v", c.name, l)
		}
		if ref := metav1.GetControllerOf(c.obj); ref == nil || ref.Kind != "LLMInferenceService" || ref.Name != "mn" {
			t.Errorf("%s controller = %+v, want the service", c.name, ref)
		}
	}
	rb := &rbacv1.RoleBinding{}
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "mn-kserve-mn-rb"}, rb))
	if rb.RoleRef.Name != "mn-kserve-mn-role" || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "mn-kserve-mn" {
		t.Errorf("RoleBinding mn-kserve-mn-rb = %+v %+v", rb.RoleRef, rb.Subjects)
	}

	// Everything but the decode LeaderWorkerSet is ready: the service is
	// not.
	testenv.Eventually(t, "not Ready while the decode LeaderWorkerSet is not available", func() error {
		e.simulateRoutes()
		e.simulatePools()
		svc := e.service("mn")
		w := cond(svc, "WorkerWorkloadReady")
		if w == nil || w.Status != metav1.ConditionFalse || cond(svc, "PrefillWorkerWorkloadReady") == nil {
			return fmt.Errorf("WorkerWorkloadReady %+v", w)
		}
		if r := cond(svc, v1alpha2.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
			return fmt.Errorf("Ready %+v", r)
		}
		return nil
	})
	// LeaderWorkerSet status events reach the service.
	e.update("mn", func(s *v1alpha2.LLMInferenceService) { s.Spec.Template = nil })
	svc := e.waitReady("mn")
	if cond(svc, "MainWorkloadReady") != nil || cond(svc, "PrefillWorkloadReady") != nil {
		t.Error("single-node workload conditions on a multi-node service")
	}

	// Worker removed: the LeaderWorkerSet and its RBAC go, a Deployment
	// (with the routing sidecar's RBAC) comes.
	e.update("mn", func(s *v1alpha2.LLMInferenceService) { s.Spec.Worker = nil })
	e.waitGone(lws, "mn-kserve-mn")
	e.waitGone(serviceAccount, "mn-kserve-mn")
	e.waitGone(role, "mn-kserve-mn-role")
	e.waitGone(roleBinding, "mn-kserve-mn-rb")
	e.waitExists(deployment, "mn-kserve")
	e.waitExists(serviceAccount, "mn-kserve")
	e.waitExists(role, "mn-kserve-role")
	e.waitExists(roleBinding, "mn-kserve-rb")
	svc = e.waitReady("mn")
	if cond(svc, "WorkerWorkloadReady") != nil || cond(svc, "MainWorkloadReady") == nil {
		t.Errorf("after the worker went: conditions %v", svc.Status.Conditions)
	}

	// Prefill removed: its LeaderWorkerSet and service account go; without
	// prefill the decode pod has no routing sidecar, so its RBAC goes too.
	e.update("mn", func(s *v1alpha2.LLMInferenceService) { s.Spec.Prefill = nil })
	e.waitGone(lws, "mn-kserve-mn-prefill")
	e.waitGone(serviceAccount, "mn-kserve-mn-prefill", "mn-kserve")
	e.waitGone(role, "mn-kserve-role")
	e.waitGone(roleBinding, "mn-kserve-rb")
	svc = e.waitReady("mn")
	if cond(svc, "PrefillWorkerWorkloadReady") != nil {
		t.Error("PrefillWorkerWorkloadReady is still set")
	}

	// Worker added back: the Deployment goes.
	e.update("mn", func(s *v1alpha2.LLMInferenceService) { s.Spec.Worker = &corev1.PodSpec{} })
	e.waitExists(lws, "mn-kserve-mn")
	e.waitGone(deployment, "mn-kserve")
	e.waitReady("mn")
}

// TestStopAndRestart stops two of three services, then starts one again.
func TestStopAndRestart(t *testing.T) {
	e := startWithGateway(t)
	for _, n := range []string{"a", "b", "c"} {
		e.create(simService(n, managedRouter))
	}
	for _, n := range []string{"a", "b", "c"} {
		e.waitReady(n)
	}
	stop := func(name, value string) {
		e.update(name, func(s *v1alpha2.LLMInferenceService) {
			if value == "" {
				delete(s.Annotations, "serving.kserve.io/stop")
				return
			}
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations["serving.kserve.io/stop"] = value
		})
	}
	stop("a", "true")
	stop("c", "True")
	for _, n := range []string{"a", "c"} {
		e.waitGone(deployment, n+"-kserve", n+"-kserve-router-scheduler")
		e.waitGone(service, n+"-kserve-workload-svc", n+"-epp-service")
		e.waitGone(route, n+"-kserve-route")
		e.waitGone(poolV1, n+"-inference-pool")
		e.waitGone(poolAlpha2, n+"-inference-pool")
		e.waitGone(secret, n+"-kserve-self-signed-certs")
		e.waitGone(clusterBinding, e.eppAuth(n))
		svc := e.waitCondition(n, v1alpha2.ConditionReady, metav1.ConditionFalse, "Stopped")
		if svc.Status.URL != "" || len(svc.Status.Addresses) > 0 {
			t.Errorf("stopped %s still has addresses: %q %v", n, svc.Status.URL, svc.Status.Addresses)
		}
		for _, c := range []string{v1alpha2.ConditionWorkloadsReady, v1alpha2.ConditionRouterReady} {
			if got := cond(svc, c); got == nil || got.Reason != "Stopped" {
				t.Errorf("%s %s = %+v, want Stopped", n, c, got)
			}
		}
	}
	if b := e.service("b"); cond(b, v1alpha2.ConditionReady).Status != metav1.ConditionTrue || !e.exists(deployment(), "b-kserve") {
		t.Error("stopping a and c touched b")
	}

	stop("a", "")
	e.waitExists(deployment, "a-kserve", "a-kserve-router-scheduler")
	e.waitExists(secret, "a-kserve-self-signed-certs")
	e.waitReady("a")
	if c := cond(e.service("c"), v1alpha2.ConditionReady); c.Reason != "Stopped" || e.exists(deployment(), "c-kserve") {
		t.Error("starting a started c")
	}
}
