package webhook_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
	"github.com/opendatahub-io/odh-serving/presets"
)

// captureRoute is a team preset (in team-b) whose route takes team-a's
// qwen: its path, or its model name on the shared /v1/... path.
func captureRoute(match string) string {
	return `
router:
  route:
    http:
      spec:
        parentRefs:
        - {group: gateway.networking.k8s.io, kind: Gateway, name: "{{ .GlobalConfig.IngressGatewayName }}", namespace: "{{ .GlobalConfig.IngressGatewayNamespace }}"}
        rules:
        - matches:
          - path: {type: PathPrefix, value: "/{{ .ObjectMeta.Namespace }}/{{ .ObjectMeta.Name }}"}
          backendRefs:
          - {group: inference.networking.k8s.io, kind: InferencePool, name: "{{ ChildName .ObjectMeta.Name ` + "`-inference-pool`" + ` }}", port: 8000}
        - matches:
          - ` + match + `
          backendRefs:
          - {group: inference.networking.k8s.io, kind: InferencePool, name: "{{ ChildName .ObjectMeta.Name ` + "`-inference-pool`" + ` }}", port: 8000}
`
}

// The webhook refuses a service whose route, once merged with its presets
// and evaluated, takes another service's path or model name, with the
// words render gives; a service on the built-in route preset (with
// model-based routing and LoRA adapters, whose header rules match the
// shared /v1/... paths) is admitted.
func TestValidatorRefusesRoutesBeyondTheirOwner(t *testing.T) {
	captures := map[string]struct{ match, field string }{
		"exact path": {
			match: `path: {type: Exact, value: /team-a/qwen/v1/chat/completions}`,
			field: "spec.router.route.http.spec.rules[1].matches[0].path.value",
		},
		"model header": {
			match: `{path: {type: Exact, value: /v1/chat/completions}, headers: [{name: X-GATEWAY-MODEL-NAME, value: publishers/team-a/models/Qwen/Qwen2.5-0.5B-Instruct}]}`,
			field: "spec.router.route.http.spec.rules[1].matches[0].headers[0].value",
		},
		"no path": {
			match: `{method: POST}`,
			field: "spec.router.route.http.spec.rules[1].matches[0].path",
		},
		"neighbour's prefix": {
			match: `path: {type: PathPrefix, value: /team-b/evil-twin}`,
			field: "spec.router.route.http.spec.rules[1].matches[0].path.value",
		},
	}
	for name, c := range captures {
		t.Run(name, func(t *testing.T) {
			catalog := teamCatalog(t, "team-b", captureRoute(c.match))
			svc := service(t, "team-b", "evil", `{model: {uri: "hf://Qwen/Qwen2.5-0.5B-Instruct"}, baseRefs: [{name: team-route}], router: {scheduler: {}}}`, nil)
			_, renderErr := engine.Render(t.Context(), svc, catalog, engine.Options{Images: images(t)})
			var re *build.RouteError
			if !errors.As(renderErr, &re) {
				t.Fatalf("render: %v; want a RouteError", renderErr)
			}
			resp := admit(t, webhook.Validator{Presets: fixed(catalog)}, svc)
			if resp.Allowed {
				t.Fatalf("admitted; render refused it: %v", renderErr)
			}
			if !strings.HasPrefix(re.Errs[0].Error(), c.field+": Forbidden: ") {
				t.Errorf("render names %q; want %s", re.Errs[0].Error(), c.field)
			}
			for _, e := range re.Errs {
				if !strings.Contains(resp.Result.Message, e.Error()) {
					t.Errorf("the webhook's refusal:\n  %s\ndoes not carry render's words:\n  %s", resp.Result.Message, e.Error())
				}
			}
		})
	}

	t.Run("built-in route preset", func(t *testing.T) {
		catalog := teamCatalog(t, "team-a", "{}")
		svc := service(t, "team-a", "qwen", `{model: {uri: "hf://Qwen/Qwen2.5-0.5B-Instruct", name: Qwen/Qwen2.5-0.5B-Instruct, `+
			`lora: {adapters: [{name: sql-lora, uri: "hf://team/sql"}]}}, router: {route: {}, gateway: {}, scheduler: {}}}`,
			map[string]string{build.AnnotationModelBasedRouting: "true"})
		if resp := admit(t, webhook.Validator{Presets: fixed(catalog)}, svc); !resp.Allowed {
			t.Fatalf("refused: %v", resp.Result)
		}
	})

	t.Run("hostnames", func(t *testing.T) {
		svc := service(t, "team-b", "svc", `{model: {uri: "hf://a/b"}, router: {route: {http: {spec: {hostnames: [b.models.example.com], `+
			`parentRefs: [{name: kserve-ingress-gateway, namespace: opendatahub}], rules: [{matches: [{path: {value: /team-b/svc}}]}]}}}}}`, nil)
		const want = `spec.router.route.http.spec.hostnames[0]: Forbidden: hostname "b.models.example.com" is not one the platform allows`
		if resp := admit(t, webhook.Validator{}, svc); resp.Allowed || !strings.Contains(resp.Result.Message, want) {
			t.Errorf("no hostname allowed: allowed %v, %v; want %q", resp.Allowed, resp.Result, want)
		}
		allowed := webhook.Validator{Options: engine.Options{AllowedHostnames: []string{"*.models.example.com"}}}
		if resp := admit(t, allowed, svc); !resp.Allowed {
			t.Errorf("*.models.example.com allowed: refused: %v", resp.Result)
		}
	})
}

func images(t *testing.T) map[string]string {
	t.Helper()
	im, err := presets.Images()
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// teamCatalog is the built-in presets with team-route, a preset of
// namespace ns.
func teamCatalog(t *testing.T, ns, spec string) *preset.Catalog {
	t.Helper()
	builtin, err := presets.Load(engine.DefaultSystemNamespace, "kserve-")
	if err != nil {
		t.Fatal(err)
	}
	s := &v1alpha2.LLMInferenceServiceSpec{}
	if err := yaml.UnmarshalStrict([]byte(spec), s); err != nil {
		t.Fatal(err)
	}
	c, err := preset.Overlay(engine.DefaultSystemNamespace, builtin, []*preset.Preset{{Name: "team-route", Namespace: ns, Spec: s}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fixed(c *preset.Catalog) func(context.Context, string) (*preset.Catalog, error) {
	return func(context.Context, string) (*preset.Catalog, error) { return c, nil }
}

func service(t *testing.T, ns, name, spec string, annotations map[string]string) *v1alpha2.LLMInferenceService {
	t.Helper()
	svc := &v1alpha2.LLMInferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "LLMInferenceService"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
	}
	if err := yaml.UnmarshalStrict([]byte(spec), &svc.Spec); err != nil {
		t.Fatal(err)
	}
	return svc
}

func admit(t *testing.T, v webhook.Validator, svc *v1alpha2.LLMInferenceService) admission.Response {
	t.Helper()
	raw, err := yaml.Marshal(svc)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err = yaml.YAMLToJSON(raw); err != nil {
		t.Fatal(err)
	}
	return v.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Name: svc.Name, Namespace: svc.Namespace,
		Kind:   metav1.GroupVersionKind{Group: "serving.kserve.io", Version: "v1alpha2", Kind: "LLMInferenceService"},
		Object: runtime.RawExtension{Raw: raw},
	}})
}
