package offline

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/presets"
)

// TestCheckGuarded: in static mode with auth on, a managed route is
// written only with an AuthPolicy in the stream that covers it: its own
// (which the engine renders for every service), or one on each Gateway it
// attaches to. Without either the render is refused, naming the route and
// the Gateway; a policy on another route, or in another namespace, does
// not count.
func TestCheckGuarded(t *testing.T) {
	catalog, err := presets.Default(nil)
	if err != nil {
		t.Fatal(err)
	}
	images, err := presets.Images()
	if err != nil {
		t.Fatal(err)
	}
	svc := &v1alpha2.LLMInferenceService{}
	svc.Namespace, svc.Name = "team-a", "chat"
	svc.Spec.Router = &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}}
	res, err := engine.Render(context.Background(), svc, catalog, engine.Options{Images: images, Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	children, err := res.Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	// without is children with each AuthPolicy changed by policy (nil:
	// left out).
	without := func(policy func(*unstructured.Unstructured) *unstructured.Unstructured) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, c := range children {
			if c.GetKind() == "AuthPolicy" {
				if c = policy(c.DeepCopy()); c == nil {
					continue
				}
			}
			out = append(out, c)
		}
		return out
	}
	moved := func(namespace, route string) func(*unstructured.Unstructured) *unstructured.Unstructured {
		return func(c *unstructured.Unstructured) *unstructured.Unstructured {
			c.SetNamespace(namespace)
			_ = unstructured.SetNestedField(c.Object, route, "spec", "targetRef", "name")
			return c
		}
	}
	none := func(*unstructured.Unstructured) *unstructured.Unstructured { return nil }
	gateway := map[string]bool{"opendatahub/kserve-ingress-gateway": true}

	if err := checkGuarded(res, children, nil); err != nil {
		t.Errorf("the route's own policy in the stream: %v", err)
	}
	if err := checkGuarded(res, without(none), gateway); err != nil {
		t.Errorf("no route policy, the gateway's in the stream: %v", err)
	}
	want := "no AuthPolicy in the stream targets HTTPRoute team-a/chat-kserve-route or Gateway opendatahub/kserve-ingress-gateway"
	for what, objs := range map[string][]*unstructured.Unstructured{
		"no policy at all":                        without(none),
		"the policy on another route":             without(moved("team-a", "elsewhere")),
		"the policy in another namespace's route": without(moved("team-b", "chat-kserve-route")),
	} {
		if err := checkGuarded(res, objs, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", what, err, want)
		}
	}
}
