package controllertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

const maasTiers = `
- {name: free, displayName: Free, level: 0, groups: [system:authenticated]}
- {name: premium, displayName: Premium, level: 1, groups: [premium-users]}
`

// startMaaS runs a controller with MaaS on, its tier ConfigMap in the
// system namespace holding maasTiers, and tier namespaces named after the
// test's namespace.
func startMaaS(t *testing.T, mods ...func(*controller.Options)) (*env, *tier.Config) {
	t.Helper()
	e := newEnv(t, append([]func(*controller.Options){func(o *controller.Options) { o.MaaS, o.SyncPeriod = true, time.Second }}, mods...)...)
	e.opts.Tiers.NamespacePrefix = e.ns + "-tier-"
	e.must(e.c.Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.sys, Name: tier.ConfigMapName},
		Data:       map[string]string{tier.ConfigMapKey: maasTiers},
	}))
	tiers, err := tier.Parse(maasTiers, e.opts.Tiers.NamespacePrefix)
	e.must(err)
	e.run()
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	return e, tiers
}

// setTiers sets (or, with "", removes) the tiers of the service sim.
func (e *env) setTiers(value string) {
	e.update("sim", func(s *v1alpha2.LLMInferenceService) {
		if value == "" {
			delete(s.Annotations, tier.AnnotationTiers)
			return
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[tier.AnnotationTiers] = value
	})
}

// mayPost asks the API server whether a ServiceAccount of the tier's
// namespace may post to the service: the gateway's SubjectAccessReview
// for an inference call with a MaaS token.
func (e *env) mayPost(tiers *tier.Config, tierName, service string) bool {
	e.t.Helper()
	ns := tiers.Namespace(tierName)
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + ns + ":alice-1a2b3c4d",
		Groups: []string{"system:serviceaccounts", tiers.ServiceAccountGroup(tierName), "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "post", Group: v1alpha2.GroupVersion.Group, Resource: "llminferenceservices", Namespace: e.ns, Name: service,
		},
	}}
	e.must(e.c.Create(context.Background(), sar))
	return sar.Status.Allowed
}

// waitAccess waits until exactly the tiers in want may post to the
// service, as the API server's authorizer decides.
func (e *env) waitAccess(tiers *tier.Config, service string, want ...string) {
	e.t.Helper()
	testenv.Eventually(e.t, fmt.Sprintf("tiers %v and no others may post to %s", want, service), func() error {
		for _, name := range tiers.Names() {
			if got, allowed := e.mayPost(tiers, name, service), slices.Contains(want, name); got != allowed {
				return fmt.Errorf("tier %s may post: %v, want %v", name, got, allowed)
			}
		}
		return nil
	})
}

// waitWarning waits for a Warning event on the service with the reason
// and a message that holds text.
func (e *env) waitWarning(service, reason, text string) {
	e.t.Helper()
	testenv.Eventually(e.t, "a Warning "+reason+" on "+service, func() error {
		events := &corev1.EventList{}
		if err := e.c.List(context.Background(), events, client.InNamespace(e.ns)); err != nil {
			return err
		}
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == service && ev.Type == corev1.EventTypeWarning && ev.Reason == reason && strings.Contains(ev.Message, text) {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
}

// TestMaaSTierAccess: a service published to the premium tier lets the
// premium tier's tokens post to it and not the free tier's, on the real
// authorizer; the access follows the annotation and the tier list. Bad
// input fails closed, as the MaaS API server's models do: a malformed
// annotation or a bad tier list removes every binding, an unknown tier
// name gets none while the known names keep theirs; TiersBound and one
// event name the annotation and the bad value; fixed, the bindings come
// back. Converged services, one bound and one with a bad annotation, write
// nothing; a service that is no longer published loses its access.
func TestMaaSTierAccess(t *testing.T) {
	e, tiers := startMaaS(t)
	for name, value := range map[string]string{"sim": `["premium"]`, "pub": `[]`} {
		svc := e.decode(simService(name, managedRouter))
		svc.Annotations = map[string]string{tier.AnnotationTiers: value}
		e.must(e.c.Create(t.Context(), svc))
	}

	e.waitAccess(tiers, "sim", "premium")
	e.waitAccess(tiers, "pub", "free", "premium")
	got := e.waitCondition("sim", controller.ConditionTiersBound, metav1.ConditionTrue, controller.ReasonTiersBound)
	r := &rbacv1.Role{}
	e.must(e.c.Get(t.Context(), clientKey(e.ns, "sim-model-user"), r))
	if ref := metav1.GetControllerOf(r); ref == nil || ref.UID != got.UID {
		t.Errorf("Role sim-model-user is controlled by %v, want the service (deleted with it)", ref)
	}
	if len(r.Rules) != 1 || strings.Join(r.Rules[0].Verbs, ",") != "post" || strings.Join(r.Rules[0].ResourceNames, ",") != "sim" {
		t.Errorf("Role sim-model-user rules: %+v", r.Rules)
	}
	if e.mayPost(tiers, "premium", "unpublished") {
		t.Error("the premium tier may post to a service that is not published")
	}

	e.setTiers(`[]`)
	e.waitAccess(tiers, "sim", "free", "premium")

	// A malformed annotation: no tier may call it, nothing of the access
	// is left.
	e.setTiers(`premium`)
	e.waitCondition("sim", controller.ConditionTiersBound, metav1.ConditionFalse, controller.ReasonInvalidTiers)
	e.waitWarning("sim", controller.ReasonInvalidTiers, `annotation alpha.maas.opendatahub.io/tiers: "premium" is not a JSON list`)
	e.waitAccess(tiers, "sim")
	e.waitGone(role, "sim-model-user")
	e.waitGone(roleBinding, "sim-model-user-free", "sim-model-user-premium")

	// Reported once: resynced every second, the bad annotation writes
	// nothing more, and neither does the bound service.
	e.waitReady("sim")
	e.waitReady("pub")
	e.assertSteadyState()

	// Fixed: the bindings are back.
	e.setTiers(`["free","premium"]`)
	e.waitAccess(tiers, "sim", "free", "premium")
	e.waitCondition("sim", controller.ConditionTiersBound, metav1.ConditionTrue, controller.ReasonTiersBound)

	// An unknown name binds nothing and takes nothing from the known ones;
	// the free tier, no longer named, loses its binding.
	e.setTiers(`["premium","gold"]`)
	c := cond(e.waitCondition("sim", controller.ConditionTiersBound, metav1.ConditionFalse, controller.ReasonUnknownTiers), controller.ConditionTiersBound)
	const unknownGold = `annotation alpha.maas.opendatahub.io/tiers: "[\"premium\",\"gold\"]" names unknown tier "gold"`
	if !strings.Contains(c.Message, unknownGold) || !strings.Contains(c.Message, "tiers [premium] may call it") {
		t.Errorf("TiersBound message %q, want it to name the annotation, its value and the tiers bound", c.Message)
	}
	e.waitWarning("sim", controller.ReasonUnknownTiers, unknownGold)
	e.waitAccess(tiers, "sim", "premium")
	e.waitGone(roleBinding, "sim-model-user-free")
	e.setTiers(`["gold"]`)
	e.waitAccess(tiers, "sim")
	e.waitGone(role, "sim-model-user")

	// A bad tier list: the API server refuses every request, and no tier
	// is bound; fixed, every binding is back.
	e.setTiers(`["premium"]`)
	e.waitAccess(tiers, "sim", "premium")
	cm := &corev1.ConfigMap{}
	e.must(e.c.Get(t.Context(), clientKey(e.sys, tier.ConfigMapName), cm))
	cm.Data[tier.ConfigMapKey] = "- {name: premium, levl: 1}"
	e.must(e.c.Update(t.Context(), cm))
	for _, name := range []string{"sim", "pub"} {
		e.waitCondition(name, controller.ConditionTiersBound, metav1.ConditionFalse, controller.ReasonInvalidTierConfig)
		e.waitWarning(name, controller.ReasonInvalidTierConfig, `unknown field "levl"`)
		e.waitAccess(tiers, name)
	}
	cm.Data[tier.ConfigMapKey] = maasTiers
	e.must(e.c.Update(t.Context(), cm))
	e.waitCondition("sim", controller.ConditionTiersBound, metav1.ConditionTrue, controller.ReasonTiersBound)
	e.waitAccess(tiers, "sim", "premium")
	e.waitAccess(tiers, "pub", "free", "premium")

	e.setTiers("")
	e.waitGone(role, "sim-model-user")
	e.waitGone(roleBinding, "sim-model-user-premium")
	testenv.Eventually(t, "TiersBound is removed", func() error {
		if c := cond(e.service("sim"), controller.ConditionTiersBound); c != nil {
			return fmt.Errorf("still %s: %s", c.Status, c.Message)
		}
		return nil
	})
	if e.mayPost(tiers, "premium", "sim") {
		t.Error("the premium tier may still post to a service that is no longer published")
	}
}

// waitParents waits until the managed route of the service sim names
// exactly the gateways want (namespace/name) as its parents.
func (e *env) waitParents(want ...string) {
	e.t.Helper()
	slices.Sort(want)
	testenv.Eventually(e.t, fmt.Sprintf("the route of sim attaches to %v", want), func() error {
		route := &gatewayv1.HTTPRoute{}
		if err := e.c.Get(context.Background(), clientKey(e.ns, "sim-kserve-route"), route); err != nil {
			return err
		}
		var got []string
		for _, p := range route.Spec.ParentRefs {
			ns := e.ns
			if p.Namespace != nil {
				ns = string(*p.Namespace)
			}
			got = append(got, ns+"/"+string(p.Name))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("parents %v", got)
		}
		return nil
	})
}
