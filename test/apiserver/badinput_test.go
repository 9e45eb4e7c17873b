package apiserver

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestBadAnnotations: bad input fails closed, as the controller's
// RoleBindings do (tier.Config.Grant). An annotation that is not a JSON
// list of tier names, or that names only tiers the list lacks, takes the
// service out of models for every tier: not listed, NotFound on get, and
// the malformed ones named in a warning. An unknown name among known ones
// grants nothing: the service is listed for the known tiers only, with
// spec.tiers holding those, and a warning that names the annotation and
// its value.
func TestBadAnnotations(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "annotations")
	publish(t, ns, "good", tiersJSON("premium"))
	publish(t, ns, "ghost", tiersJSON("premium", "platinum"))
	publish(t, ns, "platinum-only", tiersJSON("platinum"))
	malformed := map[string]string{"truncated": `["premium"`, "string": `"premium"`, "null": `null`, "empty-name": `["premium",""]`, "not-names": `["premium",1]`}
	for name, value := range malformed {
		publish(t, ns, name, value)
	}
	alice := newUser(t, premiumUser, "premium-users")
	// One user per tier: free, premium, partner (bob in its group),
	// enterprise.
	users := []*user{alice, newUser(t, freeUser), newUser(t, freeUser, "partner-users"), newUser(t, enterpriseUser, "enterprise-users")}
	alice.waitModels(t, ns, ns+"/ghost", ns+"/good")
	for _, u := range users[1:] {
		u.waitModels(t, ns)
	}

	alice.warnings.take()
	if _, err := alice.listModels(t, ns); err != nil {
		t.Fatal(err)
	}
	warned := alice.warnings.take()
	want := []string{fmt.Sprintf(`LLMInferenceService %s/ghost: annotation %s: "[\"premium\",\"platinum\"]" names unknown tier "platinum"; the tiers are "free", "premium", "partner", "enterprise"; only [premium] see it`, ns, tier.AnnotationTiers)}
	for name, value := range malformed {
		want = append(want, fmt.Sprintf("LLMInferenceService %s/%s is not published: annotation %s: %q", ns, name, tier.AnnotationTiers, value))
	}
	for _, w := range want {
		if !strings.Contains(warned, w) {
			t.Errorf("warnings of the list lack %q; got:\n%s", w, warned)
		}
	}

	ghost := &modelv1alpha1.Model{}
	if err := alice.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ghost"}, ghost); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ghost.Spec.Tiers, ","); got != "premium" {
		t.Errorf("model ghost's spec.tiers are %q, want the tiers granted: premium", got)
	}
	for _, u := range users {
		names := []string{"platinum-only"}
		for name := range malformed {
			names = append(names, name)
		}
		if u != alice {
			names = append(names, "ghost")
		}
		for _, name := range names {
			err := u.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &modelv1alpha1.Model{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s gets model %s: %v, want NotFound", u.name, name, err)
			}
		}
	}
}

// TestBadTierConfig: every way the tier ConfigMap can be wrong makes the
// requests that need a tier fail with a 503 naming the ConfigMap and what
// is wrong; the server keeps running and recovers with the ConfigMap.
func TestBadTierConfig(t *testing.T) {
	key := client.ObjectKey{Namespace: systemNS, Name: tier.ConfigMapName}
	gateway := newUser(t, gatewayUser)
	alice := newUser(t, premiumUser, "premium-users")
	t.Cleanup(func() { restoreTiers(t, gateway) })
	what := "ConfigMap " + key.String()
	for name, tc := range map[string]struct {
		data map[string]string // nil deletes the ConfigMap
		want string
	}{
		"not YAML":        {map[string]string{"tiers": "- name: [free"}, what + ": key tiers: not a YAML list of {name, displayName, description, level, groups}"},
		"unknown field":   {map[string]string{"tiers": "- name: free\n  group: [system:authenticated]\n"}, `unknown field "group"`},
		"duplicate name":  {map[string]string{"tiers": "- name: free\n- name: free\n"}, what + `: key tiers: invalid tiers: tiers[1] ("free"): the name is also tiers[0]'s`},
		"not a namespace": {map[string]string{"tiers": "- name: Free_Tier\n"}, what + `: key tiers: invalid tiers: tiers[0] ("Free_Tier"): the tier's namespace "maas-default-gateway-tier-Free_Tier" is not a valid name`},
		"no name":         {map[string]string{"tiers": "- level: 3\n"}, what + ": key tiers: invalid tiers: tiers[0]: name is required"},
		"no tiers":        {map[string]string{"tiers": "[]"}, what + ": key tiers: no tiers"},
		"no key":          {map[string]string{"tier": tiersYAML}, what + ": no key tiers"},
		"no ConfigMap":    {nil, what + ": not found"},
	} {
		t.Run(name, func(t *testing.T) {
			setTiers(t, tc.data)
			testenv.Eventually(t, "a tierreview fails", func() error {
				_, err := gateway.review(t, "premium-users")
				if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), tc.want) {
					return fmt.Errorf("got %w, want 503 with %q", err, tc.want)
				}
				return nil
			})
			if _, err := alice.listModels(t, ""); !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("list models: %v, want 503 with %q", err, tc.want)
			}
			if _, err := alice.requestToken(t, nil); !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("token request: %v, want 503 with %q", err, tc.want)
			}
			select {
			case err := <-server.done:
				t.Fatalf("the api-server exited: %v", err)
			default:
			}
		})
	}
}

// restoreTiers puts TestMain's tier list back and waits until the server
// uses it.
func restoreTiers(t *testing.T, gateway *user) {
	t.Helper()
	setTiers(t, map[string]string{tier.ConfigMapKey: tiersYAML})
	testenv.Eventually(t, "the tier configuration is back", func() error {
		r, err := gateway.review(t, "premium-users")
		if err == nil && r.Status.Tier != "premium" {
			err = fmt.Errorf("tier %+v", r.Status)
		}
		return err
	})
}

// setTiers writes data to the tier ConfigMap, or deletes it when nil.
func setTiers(tb testing.TB, data map[string]string) {
	tb.Helper()
	cm := &corev1.ConfigMap{}
	cm.Name, cm.Namespace = tier.ConfigMapName, systemNS
	// In Cleanup the test's context is done already.
	ctx := context.WithoutCancel(tb.Context())
	err := cp.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	switch {
	case data == nil && err == nil:
		err = cp.Client.Delete(ctx, cm)
	case data == nil:
		err = client.IgnoreNotFound(err)
	case apierrors.IsNotFound(err):
		cm.Data = data
		err = cp.Client.Create(ctx, cm)
	case err == nil:
		cm.Data = data
		err = cp.Client.Update(ctx, cm)
	}
	if err != nil {
		tb.Fatalf("set the tier ConfigMap: %v", err)
	}
}

// TestUserInNoTier: with a tier list that leaves system:authenticated out
// there is no default tier; a user in no tier group gets a 403 that names
// the ConfigMap, for models and for tokens, and a tierreview says so.
func TestUserInNoTier(t *testing.T) {
	gateway := newUser(t, gatewayUser)
	t.Cleanup(func() { restoreTiers(t, gateway) })
	setTiers(t, map[string]string{tier.ConfigMapKey: "- {name: premium, level: 1, groups: [premium-users]}\n"})
	testenv.Eventually(t, "the tier list without free", func() error {
		r, err := gateway.review(t, "system:authenticated")
		if err == nil && r.Status.Error == "" {
			err = fmt.Errorf("system:authenticated still has tier %q", r.Status.Tier)
		}
		return err
	})
	bob := newUser(t, freeUser)
	want := `user "` + freeUser + `" is in no MaaS tier: none of its groups [system:authenticated] is listed in ConfigMap ` + systemNS + "/" + tier.ConfigMapName
	if _, err := bob.listModels(t, ""); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("list models: %v, want 403 with %q", err, want)
	}
	if _, err := bob.requestToken(t, nil); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("token request: %v, want 403 with %q", err, want)
	}
}
