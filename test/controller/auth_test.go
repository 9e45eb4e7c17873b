package controllertest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/kuadrant"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func authPolicy() client.Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kuadrant.io/v1")
	u.SetKind("AuthPolicy")
	return u
}

const httpRoutesReady = "HTTPRoutesReady"

// withAuth runs the controller with --enable-auth.
func withAuth(o *controller.Options) { o.Auth = true }

// openService is the simulator service opened to anonymous callers.
const openService = `
metadata:
  name: open
  annotations:
    security.opendatahub.io/enable-auth: "false"
spec:
  model:
    name: Qwen/Qwen2.5-0.5B-Instruct
  baseRefs:
  - name: kserve-config-llm-cpu-simulator
  router:
    route: {}
    gateway: {}
    scheduler: {}
`

// TestAuthFailsClosedWithoutKuadrant runs the controller with auth on in
// a cluster without Kuadrant: no route is served, and the services' status
// says why and what to install; the workloads run meanwhile. When
// Kuadrant's AuthPolicy CRD is installed, with no restart, the routes come,
// and the service opened with the enable-auth annotation gets its anonymous
// AuthPolicy, owned by it; the protected service's route waits, with its
// status saying so, until an AuthPolicy targets its Gateway (the chart's
// <gateway>-authn, a default deny), then comes with its own AuthPolicy,
// owned by it, that names it. Each route is applied fenced (no backends)
// until Kuadrant (test/kuadrant) reports the policies that protect it
// Accepted and Enforced: the opened service's own, the protected
// service's own and its gateway's. A protected route is ready only once
// Kuadrant also reports, on a kuadrant.io/policy-controller parent, that
// an AuthPolicy affects it (as ODH's KServe requires); the opened service
// does not wait for that, and its policy names it again when the
// annotation goes. When the CRD goes, so do the routes.
//
// One test, so the shared control plane installs and deletes the CRD once.
func TestAuthFailsClosedWithoutKuadrant(t *testing.T) {
	crd := authPolicyCRD(t)
	err := cp.Client.Get(context.Background(), client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("CRD %s is there (%v); this test starts without it", crd.Name, err)
	}
	e := startWithGateway(t, withAuth)
	e.create(simulator)
	e.create(openService)
	// Opened too, through routes of its own: each gets <route>-authn.
	own := e.decode(simService("own", `    route:
      http:
        refs:
        - name: own-http
    scheduler: {}
`))
	own.Annotations = map[string]string{convention.AnnotationEnableAuth: "false"}
	e.must(e.c.Create(context.Background(), own))
	for _, name := range []string{"sim", "open"} {
		svc := e.waitCondition(name, httpRoutesReady, metav1.ConditionFalse, "CRDMissing")
		msg := cond(svc, httpRoutesReady).Message
		for _, want := range []string{convention.AuthPolicyCRD, name + "-kserve-route", "Kuadrant"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: HTTPRoutesReady message %q does not name %q", name, msg, want)
			}
		}
		if c := cond(svc, v1alpha2.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != "CRDMissing" {
			t.Errorf("%s: Ready %s %s, want False CRDMissing", name, c.Status, c.Reason)
		}
		if svc.Status.URL != "" || len(svc.Status.Addresses) > 0 {
			t.Errorf("%s: a URL (%v, %v) for a route that is not served", name, svc.Status.URL, svc.Status.Addresses)
		}
	}
	// The workloads are not held back; only the routes are. The service
	// with routes of its own waits for the CRD for its policy, without an
	// error (the routes are the user's: neither applied nor withheld).
	e.waitExists(deployment, "sim-kserve", "open-kserve", "own-kserve")
	if c := cond(e.service("own"), v1alpha2.ConditionRouterReady); c != nil && c.Reason == controller.ReasonReconcileError {
		t.Errorf("own: RouterReady %s: %s", c.Reason, c.Message)
	}
	for _, name := range []string{"sim-kserve-route", "open-kserve-route"} {
		if e.exists(route(), name) {
			t.Errorf("HTTPRoute %s exists while auth is on and Kuadrant's AuthPolicy CRD is missing", name)
		}
	}

	installCRD(t, crd)
	t.Cleanup(func() { uninstallCRD(t, crd.Name) })
	// The opened service brings its own policy; the protected one waits for
	// its gateway's.
	e.waitExists(route, "open-kserve-route")
	e.waitExists(authPolicy, "open-kserve-route-authn", "own-http-authn")
	svc := e.waitCondition("sim", httpRoutesReady, metav1.ConditionFalse, controller.ReasonAuthPolicyMissing)
	if msg := cond(svc, httpRoutesReady).Message; !strings.Contains(msg, e.sys+"/kserve-ingress-gateway") {
		t.Errorf("HTTPRoutesReady message %q does not name the Gateway", msg)
	}
	for _, o := range []struct {
		obj  func() client.Object
		name string
	}{{route, "sim-kserve-route"}, {authPolicy, "sim-kserve-route-authn"}} {
		if e.exists(o.obj(), o.name) {
			t.Errorf("%s exists while no AuthPolicy targets its Gateway", o.name)
		}
	}
	// The gateway's AuthPolicy, as the chart makes it with auth.enabled.
	// The protected service's route comes with its own policy, which names
	// the service literally, owned by it. Until Kuadrant reports the
	// policies enforced, the route is applied fenced: no backends, so
	// Kuadrant can enforce on it and nothing reaches the model.
	e.createGatewayPolicy(e.sys, "kserve-ingress-gateway")
	e.waitExists(route, "sim-kserve-route")
	e.waitExists(authPolicy, "sim-kserve-route-authn")
	svc = e.waitCondition("sim", httpRoutesReady, metav1.ConditionFalse, controller.ReasonAuthNotEnforced)
	for _, want := range []string{"AuthPolicy " + e.sys + "/kserve-ingress-gateway-authn on Gateway " + e.sys + "/kserve-ingress-gateway listener http",
		"Kuadrant has not reported"} {
		if msg := cond(svc, httpRoutesReady).Message; !strings.Contains(msg, want) {
			t.Errorf("HTTPRoutesReady message %q does not name %q", msg, want)
		}
	}
	if e.served("sim-kserve-route") {
		t.Error("HTTPRoute sim-kserve-route is served before Kuadrant enforces its policies")
	}
	policy := authPolicy()
	e.must(e.c.Get(context.Background(), clientKey(e.ns, "sim-kserve-route-authn"), policy))
	if got := reviewedService(policy.(*unstructured.Unstructured)); got != e.ns+"/sim" {
		t.Errorf("AuthPolicy sim-kserve-route-authn authorizes against %q, want the service %s/sim", got, e.ns)
	}
	if ref := metav1.GetControllerOf(policy); ref == nil || ref.UID != e.service("sim").UID {
		t.Errorf("AuthPolicy sim-kserve-route-authn is not controlled by its service: %v", policy.GetOwnerReferences())
	}
	e.must(e.c.Get(context.Background(), clientKey(e.ns, "open-kserve-route-authn"), policy))
	if ref := metav1.GetControllerOf(policy); ref == nil || ref.UID != e.service("open").UID {
		t.Errorf("AuthPolicy open-kserve-route-authn is not controlled by its service: %v", policy.GetOwnerReferences())
	}
	e.must(e.c.Get(context.Background(), clientKey(e.ns, "own-http-authn"), policy))
	if target, _, _ := unstructured.NestedString(policy.(*unstructured.Unstructured).Object, "spec", "targetRef", "name"); target != "own-http" {
		t.Errorf("AuthPolicy own-http-authn targets %q, want the service's own route own-http", target)
	}
	if ref := metav1.GetControllerOf(policy); ref == nil || ref.UID != e.service("own").UID {
		t.Errorf("AuthPolicy own-http-authn is not controlled by its service: %v", policy.GetOwnerReferences())
	}

	// Kuadrant reports the opened service's own policy enforced (only the
	// test namespace: the gateway's policy stays unreported): open is
	// served and Ready, without its gateway's; sim still waits.
	testenv.Eventually(t, "open is Ready once its own AuthPolicy is enforced", func() error {
		e.simulate()
		if err := kuadrant.Sync(context.Background(), e.c, e.ns); err != nil {
			return err
		}
		if c := cond(e.service("open"), v1alpha2.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready %+v", c)
		}
		return nil
	})
	if !e.served("open-kserve-route") {
		t.Error("HTTPRoute open-kserve-route is not served once its own AuthPolicy is enforced")
	}
	if c := cond(e.service("sim"), v1alpha2.ConditionReady); c.Status == metav1.ConditionTrue || e.served("sim-kserve-route") {
		t.Error("sim is Ready, or served, before Kuadrant enforces its gateway's policy")
	}
	// And the gateway's: sim is served, and Ready once Kuadrant also
	// reports the route affected (kuadrant.io/AuthPolicyAffected).
	testenv.Eventually(t, "sim is Ready once its gateway's AuthPolicy is enforced", func() error {
		e.simulate()
		if err := kuadrant.Sync(context.Background(), e.c, e.ns, e.sys); err != nil {
			return err
		}
		if c := cond(e.service("sim"), v1alpha2.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready %+v", c)
		}
		return nil
	})
	// Kuadrant reports the policy no longer affects the route: not ready.
	e.simulateKuadrant(metav1.ConditionFalse)
	e.waitCondition("sim", httpRoutesReady, metav1.ConditionFalse, controller.ReasonAuthNotEnforced)

	// open is protected again: its policy names it instead of letting
	// anyone in.
	e.update("open", func(s *v1alpha2.LLMInferenceService) {
		delete(s.Annotations, convention.AnnotationEnableAuth)
	})
	testenv.Eventually(t, "open's route policy protected again", func() error {
		p := authPolicy()
		if err := e.c.Get(context.Background(), clientKey(e.ns, "open-kserve-route-authn"), p); err != nil {
			return err
		}
		if got := reviewedService(p.(*unstructured.Unstructured)); got != e.ns+"/open" {
			return fmt.Errorf("authorizes against %q", got)
		}
		return nil
	})

	// The AuthPolicy CRD goes: the routes go with it, and the status says so.
	uninstallCRD(t, crd.Name)
	e.waitGone(route, "sim-kserve-route", "open-kserve-route")
	e.waitCondition("sim", httpRoutesReady, metav1.ConditionFalse, "CRDMissing")
}

// reviewedService is the namespace/name of the LLMInferenceService a
// protected route policy's SubjectAccessReview names; "" for another
// policy (an anonymous one).
func reviewedService(policy *unstructured.Unstructured) string {
	attrs := []string{"spec", "rules", "authorization", build.AuthRuleAuthorization, "kubernetesSubjectAccessReview", "resourceAttributes"}
	ns, _, _ := unstructured.NestedString(policy.Object, append(attrs, "namespace", "value")...)
	name, _, _ := unstructured.NestedString(policy.Object, append(attrs, "name", "value")...)
	if ns == "" || name == "" {
		return ""
	}
	return ns + "/" + name
}

// authPolicyCRD is Kuadrant's AuthPolicy CRD; the tests need no other of
// Kuadrant's.
func authPolicyCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	all, err := crds.Load(crds.Kuadrant)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		if crd.Name == convention.AuthPolicyCRD {
			return crd
		}
	}
	t.Fatalf("no CRD %s in %s", convention.AuthPolicyCRD, crds.Kuadrant)
	return nil
}

// simulateKuadrant writes, on every route in the test namespace, the parent
// status Kuadrant's policy controller writes: one entry per parent
// Gateway, with kuadrant.io/AuthPolicyAffected at status.
func (e *env) simulateKuadrant(status metav1.ConditionStatus) {
	e.t.Helper()
	e.updateStatuses(statusesToWrite(e, &gatewayv1.HTTPRouteList{}, func(rt *gatewayv1.HTTPRoute) bool {
		parents := slices.DeleteFunc(slices.Clone(rt.Status.Parents), func(p gatewayv1.RouteParentStatus) bool {
			return p.ControllerName == convention.KuadrantPolicyController
		})
		for _, ref := range rt.Spec.ParentRefs {
			parents = append(parents, gatewayv1.RouteParentStatus{
				ParentRef: ref, ControllerName: convention.KuadrantPolicyController,
				Conditions: []metav1.Condition{{
					Type: convention.ConditionAuthPolicyAffected, Status: status, Reason: "Accepted",
					Message: "Object affected by AuthPolicy", ObservedGeneration: rt.Generation, LastTransitionTime: metav1.Now(),
				}},
			})
		}
		rt.Status.Parents = parents
		return true
	}))
}

// uninstallCRD deletes a CRD and waits until it is gone (deleteCRD puts it back when the test ends).
func uninstallCRD(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	if err := cp.Client.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	testenv.Eventually(t, "CRD "+name+" is gone", func() error {
		err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
}

// TestMaaSRoute: a service published to MaaS gets a route of its own on
// the MaaS gateway (<service>-kserve-maas-route) and the AuthPolicy that
// checks MaaS callers against it (<service>-kserve-maas-route-authn),
// owned by it; its managed route stays off the MaaS gateway. Without
// Kuadrant's AuthPolicy CRD neither is served, and TiersBound says so.
// The enable-auth opt-out opens the managed route only: the MaaS policy
// stays. Unpublished (only unknown tiers), both go; published to every
// tier, they come back.
//
// With the CRD dance, like TestAuthFailsClosedWithoutKuadrant: the
// shared control plane installs and deletes it in turn.
func TestMaaSRoute(t *testing.T) {
	crd := authPolicyCRD(t)
	maasNS := testenv.NewNamespace(t, cp.Client, "maasgw")
	const maasGateway = "maas-default-gateway"
	e, _ := startMaaS(t, withAuth, func(o *controller.Options) {
		o.MaaSGatewayName, o.MaaSGatewayNamespace = maasGateway, maasNS
	})
	e.gateway(maasNS, maasGateway, "maas.example.com")
	svc := e.decode(simService("sim", managedRouter))
	svc.Annotations = map[string]string{"alpha.maas.opendatahub.io/tiers": `["premium"]`}
	e.must(e.c.Create(t.Context(), svc))
	got := e.waitCondition("sim", controller.ConditionTiersBound, metav1.ConditionFalse, "CRDMissing")
	if msg := cond(got, controller.ConditionTiersBound).Message; !strings.Contains(msg, "sim-kserve-maas-route") || !strings.Contains(msg, convention.AuthPolicyCRD) {
		t.Errorf("TiersBound message %q: want it to name the MaaS route and the CRD", msg)
	}
	if e.exists(route(), "sim-kserve-maas-route") {
		t.Error("the MaaS route is served without Kuadrant's AuthPolicy CRD")
	}

	installCRD(t, crd)
	t.Cleanup(func() { uninstallCRD(t, crd.Name) })
	e.createGatewayPolicy(e.sys, "kserve-ingress-gateway")
	e.waitExists(route, "sim-kserve-route", "sim-kserve-maas-route")
	e.waitExists(authPolicy, "sim-kserve-maas-route-authn")
	e.waitParents(e.sys + "/kserve-ingress-gateway")
	e.waitCondition("sim", controller.ConditionTiersBound, metav1.ConditionTrue, controller.ReasonTiersBound)
	maas := &gatewayv1.HTTPRoute{}
	e.must(e.c.Get(t.Context(), clientKey(e.ns, "sim-kserve-maas-route"), maas))
	if len(maas.Spec.ParentRefs) != 1 || string(maas.Spec.ParentRefs[0].Name) != maasGateway || string(*maas.Spec.ParentRefs[0].Namespace) != maasNS {
		t.Errorf("MaaS route parents %+v, want %s/%s only", maas.Spec.ParentRefs, maasNS, maasGateway)
	}
	policy := authPolicy()
	e.must(e.c.Get(t.Context(), clientKey(e.ns, "sim-kserve-maas-route-authn"), policy))
	if ref := metav1.GetControllerOf(policy); ref == nil || ref.UID != e.service("sim").UID {
		t.Errorf("the MaaS policy is not controlled by its service: %v", policy.GetOwnerReferences())
	}
	maasRules := func() map[string]any {
		p := authPolicy()
		e.must(e.c.Get(t.Context(), clientKey(e.ns, "sim-kserve-maas-route-authn"), p))
		rules, _, _ := unstructured.NestedMap(p.(*unstructured.Unstructured).Object, "spec", "rules")
		return rules
	}
	before := maasRules()

	// The opt-out: the managed route gets its anonymous policy; the MaaS
	// route keeps its checks, and is not ready until Kuadrant enforces them.
	e.update("sim", func(s *v1alpha2.LLMInferenceService) { s.Annotations[convention.AnnotationEnableAuth] = "false" })
	e.waitExists(authPolicy, "sim-kserve-route-authn")
	anon := authPolicy()
	e.must(e.c.Get(t.Context(), clientKey(e.ns, "sim-kserve-route-authn"), anon))
	if target, _, _ := unstructured.NestedString(anon.(*unstructured.Unstructured).Object, "spec", "targetRef", "name"); target != "sim-kserve-route" {
		t.Errorf("the anonymous policy targets %q, want the managed route", target)
	}
	if after := maasRules(); !reflect.DeepEqual(after, before) {
		t.Errorf("the opt-out changed the MaaS policy's rules:\n%v\nwant\n%v", after, before)
	}
	// Kuadrant (test/kuadrant) reports the policies Accepted and Enforced
	// and each generation of the routes affected, as its policy controller
	// does while it runs.
	testenv.Eventually(t, "sim is Ready once Kuadrant enforces its policies", func() error {
		e.simulate()
		if err := kuadrant.Sync(context.Background(), e.c, e.ns, e.sys); err != nil {
			return err
		}
		e.simulateKuadrant(metav1.ConditionTrue)
		svc := e.service("sim")
		if c := cond(svc, v1alpha2.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || svc.Status.ObservedGeneration != svc.Generation {
			return fmt.Errorf("Ready: %+v", c)
		}
		return nil
	})
	if url := e.service("sim").Status.Addresses; !slices.ContainsFunc(url, func(a v1alpha2.Address) bool { return strings.Contains(a.URL, "maas.example.com") }) {
		t.Errorf("addresses %v: want the MaaS gateway's URL among them", url)
	}

	// Unpublished (only an unknown tier): both go; every tier: back.
	e.setTiers(`["gold"]`)
	e.waitGone(route, "sim-kserve-maas-route")
	e.waitGone(authPolicy, "sim-kserve-maas-route-authn")
	e.setTiers(`[]`)
	e.waitExists(route, "sim-kserve-maas-route")
	e.waitExists(authPolicy, "sim-kserve-maas-route-authn")

	// The CRD goes: the MaaS route goes with it.
	uninstallCRD(t, crd.Name)
	e.waitGone(route, "sim-kserve-maas-route")
}

// createGatewayPolicy makes an AuthPolicy on the Gateway namespace/name,
// as the chart makes <gateway>-authn.
func (e *env) createGatewayPolicy(namespace, gateway string) {
	e.t.Helper()
	policy := authPolicy().(*unstructured.Unstructured)
	policy.SetNamespace(namespace)
	policy.SetName(gateway + "-authn")
	e.must(unstructured.SetNestedMap(policy.Object, map[string]any{
		"targetRef": map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway},
		"rules": map[string]any{"authentication": map[string]any{"kubernetes-user": map[string]any{
			"kubernetesTokenReview": map[string]any{"audiences": []any{"https://kubernetes.default.svc"}},
		}}},
	}, "spec"))
	e.must(e.c.Create(context.Background(), policy))
}
