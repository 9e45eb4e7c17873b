package controllertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestModelBasedRoutingComesAndGoes: with the annotation the route has
// KServe's twelve rules, the model header rules naming the model and its
// LoRA adapter, and the service's URL stays /<ns>/<name> although a header
// rule matches every path. Without it the header rules leave the live route
// (a route only ever growing was KServe's bug).
func TestModelBasedRoutingComesAndGoes(t *testing.T) {
	e := startWithGateway(t)
	e.create(`
metadata:
  name: mbr
  annotations:
    serving.kserve.io/model-based-routing-enabled: "true"
spec:
  model:
    name: qwen
    lora:
      adapters:
      - {name: sql, uri: hf://team/qwen-sql-lora}
  baseRefs:
  - name: kserve-config-llm-cpu-simulator
  router:
` + managedRouter)
	e.waitExists(route, "mbr-kserve-route")
	model, adapter := "publishers/"+e.ns+"/models/qwen", "publishers/"+e.ns+"/models/sql"
	waitRoute(e, "mbr-kserve-route", 12, []string{adapter, model})
	svc := e.waitReady("mbr")
	if want := "http://gw.example.com/" + e.ns + "/mbr"; svc.Status.URL != want {
		t.Errorf("url = %q, want %q", svc.Status.URL, want)
	}

	e.update("mbr", func(s *v1alpha2.LLMInferenceService) {
		delete(s.Annotations, "serving.kserve.io/model-based-routing-enabled")
	})
	waitRoute(e, "mbr-kserve-route", 10, nil)
}

// waitRoute waits until the live route has n rules and its model header
// matches name exactly the given values.
func waitRoute(e *env, name string, n int, headers []string) {
	e.t.Helper()
	headers = slices.Sorted(slices.Values(headers))
	testenv.Eventually(e.t, fmt.Sprintf("route %s has %d rules and model headers %v", name, n, headers), func() error {
		rt := e.route(name)
		got := modelHeaders(rt)
		if len(rt.Spec.Rules) != n || !slices.Equal(got, headers) {
			return fmt.Errorf("%d rules, model headers %v", len(rt.Spec.Rules), got)
		}
		return nil
	})
}

func modelHeaders(rt *gatewayv1.HTTPRoute) []string {
	var out []string
	for _, r := range rt.Spec.Rules {
		for _, m := range r.Matches {
			for _, h := range m.Headers {
				if strings.EqualFold(string(h.Name), "X-Gateway-Model-Name") {
					out = append(out, h.Value)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
