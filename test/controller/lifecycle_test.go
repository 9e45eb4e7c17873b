package controllertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestChildDeletedOrEditedByHand: a deleted child comes back, a hand edit
// of a field the controller sets is undone.
func TestChildDeletedOrEditedByHand(t *testing.T) {
	e := startWithGateway(t)
	e.create(simulator)
	e.waitReady("sim")
	ctx := context.Background()

	d := &appsv1.Deployment{}
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "sim-kserve"}, d))
	e.must(e.c.Delete(ctx, d))
	testenv.Eventually(t, "the Deployment comes back", func() error {
		again := &appsv1.Deployment{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "sim-kserve"}, again); err != nil {
			return err
		}
		if again.UID == d.UID {
			return fmt.Errorf("still the old one")
		}
		return nil
	})

	// The cluster-scoped binding is found again through its owner annotation.
	crb := &rbacv1.ClusterRoleBinding{}
	e.must(e.c.Get(ctx, client.ObjectKey{Name: e.eppAuth("sim")}, crb))
	e.must(e.c.Delete(ctx, crb))
	testenv.Eventually(t, "the ClusterRoleBinding comes back", func() error {
		again := &rbacv1.ClusterRoleBinding{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: crb.Name}, again); err != nil {
			return err
		}
		if again.UID == crb.UID {
			return fmt.Errorf("still the old one")
		}
		return nil
	})

	// A hand edit of a field the controller owns.
	svc := &corev1.Service{}
	e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "sim-kserve-workload-svc"}, svc))
	svc.Spec.Selector["llm-d.ai/role"] = "prefill"
	e.must(e.c.Update(ctx, svc))
	testenv.Eventually(t, "the hand edit is undone", func() error {
		again := &corev1.Service{}
		e.must(e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "sim-kserve-workload-svc"}, again))
		if got := again.Spec.Selector["llm-d.ai/role"]; got != "both" {
			return fmt.Errorf("selector role %q", got)
		}
		return nil
	})
}

// TestForeignObjectsUntouched: an object with a child's labels that the
// service does not control is never deleted, and an object holding a
// child's name is neither changed nor adopted, though it lacks the label
// the controller's cache selects children by (it never sees it there).
func TestForeignObjectsUntouched(t *testing.T) {
	e := startWithGateway(t)
	ctx := context.Background()
	intruder := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "intruder", Labels: map[string]string{
			"app.kubernetes.io/part-of": "llminferenceservice", "app.kubernetes.io/name": "sim",
		}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	e.must(e.c.Create(ctx, intruder))
	squatter := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "sim-epp-sa", Labels: map[string]string{"team": "other"}}}
	e.must(e.c.Create(ctx, squatter))
	squatterSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "sim-epp-service"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "other", Port: 8080}}},
	}
	e.must(e.c.Create(ctx, squatterSvc))

	e.create(simulator)
	svc := e.waitCondition("sim", v1alpha2.ConditionRouterReady, metav1.ConditionFalse, "ReconcileError")
	msg := cond(svc, v1alpha2.ConditionRouterReady).Message
	for _, taken := range []string{"ServiceAccount " + e.ns + "/sim-epp-sa", "Service " + e.ns + "/sim-epp-service"} {
		if !strings.Contains(msg, taken+" exists and is not controlled by this LLMInferenceService") {
			t.Errorf("RouterReady message %q does not name the squatter %s", msg, taken)
		}
	}
	e.waitExists(deployment, "sim-kserve") // the rest is applied
	for _, s := range []client.Object{squatter, squatterSvc} {
		got := s.DeepCopyObject().(client.Object)
		e.must(e.c.Get(ctx, client.ObjectKeyFromObject(s), got))
		if got.GetResourceVersion() != s.GetResourceVersion() || len(got.GetOwnerReferences()) > 0 || got.GetLabels()["app.kubernetes.io/name"] != "" {
			t.Errorf("the squatting %T %s was changed: resourceVersion %s (was %s), labels %v, owners %v",
				s, s.GetName(), got.GetResourceVersion(), s.GetResourceVersion(), got.GetLabels(), got.GetOwnerReferences())
		}
	}

	// Removing the router deletes the service's router children; the
	// intruder with the same labels stays.
	e.must(e.c.Delete(ctx, squatter))
	e.must(e.c.Delete(ctx, squatterSvc))
	e.waitReady("sim")
	e.update("sim", func(s *v1alpha2.LLMInferenceService) { s.Spec.Router = nil })
	e.waitGone(serviceAccount, "sim-epp-sa")
	e.waitReady("sim")
	if !e.exists(service(), "intruder") {
		t.Error("the intruder Service was deleted")
	}
}

// TestConflictRetried: status writes that fail with a conflict are retried
// until they land, and no reconcile fails for it: a conflict is an expected
// race, not a "Reconciler error" in the log.
func TestConflictRetried(t *testing.T) {
	e := startWithGateway(t)
	errorsBefore := reconcileErrors(t)
	failed := e.rec.FailFirst(3, "PATCH", "/llminferenceservices/sim/status")
	e.create(simulator)
	e.waitReady("sim")
	e.rec.SetConflict(nil)
	if n := failed(); n != 3 {
		t.Errorf("%d status writes failed, want 3", n)
	}
	if n := reconcileErrors(t) - errorsBefore; n != 0 {
		t.Errorf("%v reconciles failed, want 0", n)
	}
}

// TestPresetChangeReachesItsUsers: changing a preset re-renders the
// services that use it, in its namespace, or everywhere for one in the
// system namespace.
func TestPresetChangeReachesItsUsers(t *testing.T) {
	e := startWithGateway(t)
	e.createConfig(e.ns, `
metadata:
  name: team-preset
spec:
  template:
    containers:
    - name: main
      env:
      - name: TEAM
        value: "1"
`)
	user := strings.Replace(simulator, "  - name: kserve-config-llm-cpu-simulator", "  - name: kserve-config-llm-cpu-simulator\n  - name: team-preset", 1)
	e.create(strings.Replace(user, "name: sim", "name: user", 1))
	e.create(simService("plain", ""))
	e.waitReady("user")
	e.waitReady("plain")
	if env := mainEnv(e, "user-kserve", "TEAM"); env != "1" {
		t.Fatalf("TEAM = %q before the change", env)
	}
	cfg := &v1alpha2.LLMInferenceServiceConfig{}
	e.must(e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "team-preset"}, cfg))
	cfg.Spec.Template.Containers[0].Env[0].Value = "2"
	e.must(e.c.Update(context.Background(), cfg))
	testenv.Eventually(t, "the baseRef change reaches its user", func() error {
		if env := mainEnv(e, "user-kserve", "TEAM"); env != "2" {
			return fmt.Errorf("TEAM = %q", env)
		}
		return nil
	})

	// A well-known preset replaced in the system namespace: the services
	// with a route get the change, the one without does not need it.
	data, err := os.ReadFile("../../presets/config-llm-router-route/preset.yaml")
	e.must(err)
	route := &v1alpha2.LLMInferenceServiceConfig{}
	e.must(yaml.UnmarshalStrict(data, route))
	route.Name = "kserve-config-llm-router-route"
	route.Namespace = e.sys
	route.Spec.Router.Route.HTTP.Spec.Hostnames = append(route.Spec.Router.Route.HTTP.Spec.Hostnames, "preset.example.com")
	e.must(e.c.Create(context.Background(), route))
	testenv.Eventually(t, "the system preset reaches the route", func() error {
		if h := e.route("user-kserve-route").Spec.Hostnames; len(h) != 1 || h[0] != "preset.example.com" {
			return fmt.Errorf("hostnames %v", h)
		}
		return nil
	})
}

func mainEnv(e *env, deployment, name string) string {
	e.t.Helper()
	d := &appsv1.Deployment{}
	e.must(e.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: deployment}, d))
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "main" {
			continue
		}
		for _, v := range c.Env {
			if v.Name == name {
				return v.Value
			}
		}
	}
	return ""
}

// TestDeleteCleansUp: deleting a service deletes its cluster-scoped
// children, which no owner reference reaches. No finalizer holds the
// service: were the controller uninstalled, its deletion (and its
// namespace's) would hang. The garbage collector (kube-controller-manager's)
// then removes the namespaced children through their owner references, and
// what the cluster made of them: ReplicaSets and Pods.
func TestDeleteCleansUp(t *testing.T) {
	e := startWithGateway(t)
	e.create(simulator)
	e.waitReady("sim")
	auth := e.eppAuth("sim")
	e.waitExists(clusterBinding, auth)
	if svc := e.service("sim"); len(svc.Finalizers) != 0 {
		t.Errorf("finalizers %v, want none", svc.Finalizers)
	}
	e.must(e.c.Delete(context.Background(), e.service("sim")))
	e.waitServiceGone("sim")
	e.waitGone(clusterBinding, auth)
	testenv.Eventually(t, "the garbage collector removes sim's Deployments, ReplicaSets, Pods and Services", func() error {
		sel := client.MatchingLabels{"app.kubernetes.io/name": "sim"}
		for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &corev1.PodList{}, &corev1.ServiceList{}} {
			if err := e.c.List(context.Background(), list, client.InNamespace(e.ns), sel); err != nil {
				return err
			}
			if n := meta.LenList(list); n > 0 {
				return fmt.Errorf("%d left in %T", n, list)
			}
		}
		return nil
	})
}

// TestEarlierFinalizerComesOff: a service that carries KServe's finalizer
// (earlier versions of odh-serving added it; so does KServe) loses it at
// its next reconcile, and is deleted at once.
func TestEarlierFinalizerComesOff(t *testing.T) {
	e := startWithGateway(t)
	svc := e.decode(simulator)
	svc.Finalizers = []string{controller.Finalizer}
	e.must(e.c.Create(context.Background(), svc))
	testenv.Eventually(t, "the finalizer comes off", func() error {
		if f := e.service("sim").Finalizers; len(f) > 0 {
			return fmt.Errorf("finalizers %v", f)
		}
		return nil
	})
	e.waitExists(clusterBinding, e.eppAuth("sim"))
	e.must(e.c.Delete(context.Background(), e.service("sim")))
	e.waitServiceGone("sim")
	e.waitGone(clusterBinding, e.eppAuth("sim"))
}

// TestBindingsOfServicesDeletedWhileStopped: a service deleted while no
// controller runs goes at once and leaves its ClusterRoleBinding; the
// controller deletes it when it starts again (the watch's first list maps
// the binding to its gone service).
func TestBindingsOfServicesDeletedWhileStopped(t *testing.T) {
	e := startWithGateway(t)
	e.create(simulator)
	auth := e.eppAuth("sim")
	e.waitExists(clusterBinding, auth)
	e.stop()
	e.must(e.c.Delete(context.Background(), e.service("sim")))
	e.waitServiceGone("sim")
	if !e.exists(clusterBinding(), auth) {
		t.Fatalf("ClusterRoleBinding %s went with no controller running", auth)
	}
	e.run()
	e.waitGone(clusterBinding, auth)
}

// waitServiceGone waits until the service name no longer exists.
func (e *env) waitServiceGone(name string) {
	e.t.Helper()
	testenv.Eventually(e.t, "service "+name+" is gone", func() error {
		err := e.c.Get(context.Background(), clientKey(e.ns, name), &v1alpha2.LLMInferenceService{})
		if err == nil {
			return fmt.Errorf("still there")
		}
		return client.IgnoreNotFound(err)
	})
}
