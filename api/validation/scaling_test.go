package validation_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/api/validation"
)

// Every scaling rule is enforced twice: by the CRDs' schema and CEL (the API
// server) and by ValidateService (the webhook and render). Each case goes
// through both, in both API versions, and both must agree: accept, or refuse
// with the same words.
func TestScalingRulesAgreeWithTheCRD(t *testing.T) {
	crd, err := crds.LoadValidator(crds.Serving)
	if err != nil {
		t.Fatal(err)
	}
	const wvaHPA = "{maxReplicas: 4, wva: {hpa: {}}}"
	const triggers = `triggers: [{type: prometheus, metadata: {serverAddress: "http://prom:9090", query: "sum(x)", threshold: "5"}}]`
	tests := map[string]struct {
		spec string
		want string // empty: valid
	}{
		"wva hpa":                  {spec: "scaling: " + wvaHPA},
		"wva hpa with behavior":    {spec: "scaling: {minReplicas: 2, maxReplicas: 4, wva: {variantCost: '2.5', hpa: {behavior: {scaleDown: {stabilizationWindowSeconds: 120}}}}}"},
		"wva keda scale to zero":   {spec: "scaling: {maxReplicas: 4, wva: {keda: {idleReplicaCount: 0, pollingInterval: 5, fallback: {failureThreshold: 3, replicas: 2}}}}"},
		"direct keda":              {spec: "scaling: {maxReplicas: 4, keda: {cooldownPeriod: 60, " + triggers + "}}"},
		"direct keda formula":      {spec: "scaling: {maxReplicas: 4, keda: {advanced: {scalingModifiers: {formula: 'a+b', target: '2'}}, " + triggers + "}}"},
		"prefill and decode agree": {spec: "scaling: " + wvaHPA + "\nprefill: {scaling: " + wvaHPA + "}"},
		"prefill scaled alone":     {spec: "prefill: {scaling: " + wvaHPA + "}"},

		"replicas with scaling":         {spec: "replicas: 2\nscaling: " + wvaHPA, want: "replicas and scaling are mutually exclusive"},
		"prefill replicas with scaling": {spec: "prefill: {replicas: 2, scaling: " + wvaHPA + "}", want: "replicas and scaling are mutually exclusive"},
		"min above max":                 {spec: "scaling: {minReplicas: 5, maxReplicas: 2, wva: {hpa: {}}}", want: "minReplicas cannot exceed maxReplicas"},
		"default min above max":         {spec: "scaling: {maxReplicas: 0, wva: {hpa: {}}}", want: "should be greater than or equal to 1"},
		"min zero":                      {spec: "scaling: {minReplicas: 0, maxReplicas: 2, wva: {hpa: {}}}", want: "should be greater than or equal to 1"},
		"wva and keda":                  {spec: "scaling: {maxReplicas: 4, wva: {hpa: {}}, keda: {" + triggers + "}}", want: "wva and keda are mutually exclusive"},
		"no mechanism":                  {spec: "scaling: {maxReplicas: 4}", want: "either wva or keda must be specified"},
		"hpa and keda":                  {spec: "scaling: {maxReplicas: 4, wva: {hpa: {}, keda: {}}}", want: "hpa and keda are mutually exclusive"},
		"no actuator":                   {spec: "scaling: {maxReplicas: 4, wva: {variantCost: '1'}}", want: "either hpa or keda must be specified"},
		"bad variant cost":              {spec: "scaling: {maxReplicas: 4, wva: {variantCost: 'cheap', hpa: {}}}", want: "spec.scaling.wva.variantCost"},
		"no triggers":                   {spec: "scaling: {maxReplicas: 4, keda: {triggers: []}}", want: "spec.scaling.keda.triggers"},
		"idle not below min":            {spec: "scaling: {minReplicas: 2, maxReplicas: 4, wva: {keda: {idleReplicaCount: 2}}}", want: "idleReplicaCount must be less than minReplicas"},
		"idle not below default min":    {spec: "scaling: {maxReplicas: 4, keda: {idleReplicaCount: 1, " + triggers + "}}", want: "idleReplicaCount must be less than minReplicas"},
		"scaling modifiers under wva":   {spec: "scaling: {maxReplicas: 4, wva: {keda: {advanced: {scalingModifiers: {formula: 'x'}}}}}", want: "scalingModifiers must not be set"},
		"hpa name under wva":            {spec: "scaling: {maxReplicas: 4, wva: {keda: {advanced: {horizontalPodAutoscalerConfig: {name: mine}}}}}", want: "horizontalPodAutoscalerConfig.name must not be set"},
		"hpa name under keda":           {spec: "scaling: {maxReplicas: 4, keda: {advanced: {horizontalPodAutoscalerConfig: {name: mine}}, " + triggers + "}}", want: "horizontalPodAutoscalerConfig.name must not be set"},
		"decode wva prefill keda": {
			spec: "scaling: " + wvaHPA + "\nprefill: {scaling: {maxReplicas: 4, keda: {" + triggers + "}}}", want: "decode and prefill must use the same scaling mode",
		},
		"decode hpa prefill keda": {
			spec: "scaling: " + wvaHPA + "\nprefill: {scaling: {maxReplicas: 4, wva: {keda: {}}}}", want: "decode and prefill must use the same actuator backend",
		},
	}
	for name, tc := range tests {
		for _, version := range []string{"v1alpha1", "v1alpha2"} {
			t.Run(name+"/"+version, func(t *testing.T) {
				doc := "apiVersion: serving.kserve.io/" + version + "\nkind: LLMInferenceService\nmetadata: {name: s, namespace: ns}\nspec:\n  " +
					strings.ReplaceAll(tc.spec, "\n", "\n  ")
				data, err := yaml.YAMLToJSON([]byte(doc))
				if err != nil {
					t.Fatal(err)
				}
				obj := &unstructured.Unstructured{}
				if err := obj.UnmarshalJSON(data); err != nil {
					t.Fatal(err)
				}
				// Render sees the object as written; the webhook after
				// the API server's defaults.
				written, err := obj.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				// The API server: defaults, schema, CEL.
				crdErrs := crd.Validate(t.Context(), obj)
				defaulted, err := obj.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				results := map[string]error{"API server": crdErrs.ToAggregate()}
				for who, raw := range map[string][]byte{"render": written, "webhook": defaulted} {
					// Decoding checks the CRD's schema, as the API server
					// does before admission; the rules follow.
					svc, errs := validation.DecodeService(version, raw)
					if len(errs) == 0 {
						errs = validation.ValidateService(svc)
					}
					results[who] = errs.ToAggregate()
				}
				for who, got := range results {
					switch {
					case tc.want == "" && got != nil:
						t.Errorf("%s refused a valid spec: %v", who, got)
					case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
						t.Errorf("%s: %v; want an error containing %q", who, got, tc.want)
					}
				}
			})
		}
	}
}
