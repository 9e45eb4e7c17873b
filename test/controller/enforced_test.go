package controllertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/kuadrant"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestRouteServedOnlyWhenEnforced (issue #32, item 7): with auth on, a
// protected service's route reaches its backends only once Kuadrant
// reports every listener it attaches to covered by an AuthPolicy Accepted
// and Enforced (test/kuadrant writes what Kuadrant's policy controller
// would). The attacks: a policy on one of a Gateway's two listeners, and
// a policy on the whole Gateway that Kuadrant does not enforce. Before
// the fix, an AuthPolicy targeting the Gateway was enough, and the route
// was served on the unprotected listener, or with nothing enforced.
func TestRouteServedOnlyWhenEnforced(t *testing.T) {
	crd := authPolicyCRD(t)
	installCRD(t, crd)
	t.Cleanup(func() { uninstallCRD(t, crd.Name) })
	e := start(t, withAuth)
	e.gatewayWithListeners(e.ns, "two", "http", "alt")
	e.gatewayWithListeners(e.ns, "one", "http")
	for name, gw := range map[string]string{"split": "two", "unenforced": "one"} {
		e.create(simService(name, fmt.Sprintf(`    route: {}
    gateway:
      refs:
      - name: %s
    scheduler: {}
`, gw)))
	}
	tokenReview := map[string]any{"authentication": map[string]any{"kubernetes-user": map[string]any{
		"kubernetesTokenReview": map[string]any{"audiences": []any{"https://kubernetes.default.svc"}},
	}}}
	// Rules Kuadrant accepts but the test gateway cannot apply (a metadata
	// call whose URL is a CEL expression, which test/authpolicy does not
	// evaluate): test/kuadrant never reports such a policy Enforced.
	unenforceable := map[string]any{"metadata": map[string]any{"lookup": map[string]any{"http": map[string]any{"urlExpression": `"http://127.0.0.1:1/"`}}}}
	e.createPolicy("two-http", "two", "http", tokenReview)
	e.createPolicy("one-authn", "one", "", unenforceable)

	t.Run("a policy on one of two listeners", func(t *testing.T) {
		e.waitWithheld(t, "split", controller.ReasonAuthPolicyMissing, "Gateway "+e.ns+"/two listener alt")
	})
	t.Run("a policy Kuadrant does not enforce", func(t *testing.T) {
		e.waitWithheld(t, "unenforced", controller.ReasonAuthNotEnforced,
			"AuthPolicy "+e.ns+"/one-authn on Gateway "+e.ns+"/one listener http: Enforced False (Unknown)")
		if !e.exists(route(), "unenforced-kserve-route") {
			t.Error("the fenced route unenforced-kserve-route is not applied: Kuadrant cannot enforce a policy on a route that does not exist")
		}
	})

	// Covered and enforced: both are served, and Ready.
	e.createPolicy("two-alt", "two", "alt", tokenReview)
	p := authPolicy()
	e.must(e.c.Get(context.Background(), clientKey(e.ns, "one-authn"), p))
	e.must(unstructured.SetNestedMap(p.(*unstructured.Unstructured).Object, tokenReview, "spec", "rules"))
	e.must(e.c.Update(context.Background(), p))
	for _, name := range []string{"split", "unenforced"} {
		testenv.Eventually(t, name+" is served and Ready", func() error {
			e.simulate()
			if err := kuadrant.Sync(context.Background(), e.c, e.ns); err != nil {
				return err
			}
			if !e.served(name + "-kserve-route") {
				return fmt.Errorf("HTTPRoute %s-kserve-route is not served: %+v", name, cond(e.service(name), httpRoutesReady))
			}
			if c := cond(e.service(name), httpRoutesReady); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("HTTPRoutesReady %+v", c)
			}
			return nil
		})
	}
}

// waitWithheld runs the gateway's and Kuadrant's status writers until the
// service's HTTPRoutesReady is False with reason, its message naming each
// of wants, and fails the test at once if the service's route is served
// (applied with its backends) meanwhile.
func (e *env) waitWithheld(t *testing.T, name, reason string, wants ...string) {
	t.Helper()
	rt := name + "-kserve-route"
	testenv.Eventually(t, fmt.Sprintf("%s withheld (%s)", name, reason), func() error {
		e.simulate()
		if err := kuadrant.Sync(context.Background(), e.c, e.ns); err != nil {
			return err
		}
		c := cond(e.service(name), httpRoutesReady)
		if e.served(rt) {
			t.Fatalf("HTTPRoute %s is served, its backends attached, while %s; HTTPRoutesReady %+v", rt, strings.Join(wants, ", "), c)
		}
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason {
			return fmt.Errorf("HTTPRoutesReady %+v", c)
		}
		for _, want := range wants {
			if !strings.Contains(c.Message, want) {
				return fmt.Errorf("HTTPRoutesReady message %q does not name %q", c.Message, want)
			}
		}
		return nil
	})
}

// served reports whether the HTTPRoute exists with a backend on a rule.
func (e *env) served(name string) bool {
	rt := &gatewayv1.HTTPRoute{}
	if !e.exists(rt, name) {
		return false
	}
	return slices.ContainsFunc(rt.Spec.Rules, func(r gatewayv1.HTTPRouteRule) bool { return len(r.BackendRefs) > 0 })
}

// gatewayWithListeners creates a programmed Gateway with an HTTP listener
// of each name, admitting routes from every namespace.
func (e *env) gatewayWithListeners(namespace, name string, listeners ...string) {
	e.t.Helper()
	all := gatewayv1.NamespacesFromAll
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "test"},
	}
	for i, l := range listeners {
		gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{
			Name: gatewayv1.SectionName(l), Port: gatewayv1.PortNumber(8080 + i), Protocol: gatewayv1.HTTPProtocolType,
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &all}},
		})
	}
	ctx := context.Background()
	e.must(e.c.Create(ctx, gw))
	gw.Status = gatewayv1.GatewayStatus{
		Addresses:  []gatewayv1.GatewayStatusAddress{{Type: ptr(gatewayv1.HostnameAddressType), Value: name + ".example.com"}},
		Conditions: []metav1.Condition{condition("Programmed", gw.Generation)},
	}
	e.must(e.c.Status().Update(ctx, gw))
}

// createPolicy makes an AuthPolicy in the test namespace on the Gateway
// gateway (its listener section, or all of it when "") with the rules.
func (e *env) createPolicy(name, gateway, section string, rules map[string]any) {
	e.t.Helper()
	policy := authPolicy().(*unstructured.Unstructured)
	policy.SetNamespace(e.ns)
	policy.SetName(name)
	target := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway}
	if section != "" {
		target["sectionName"] = section
	}
	e.must(unstructured.SetNestedMap(policy.Object, map[string]any{"targetRef": target, "rules": rules}, "spec"))
	e.must(e.c.Create(context.Background(), policy))
}
