package validation_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/opendatahub-io/odh-serving/api"
	"github.com/opendatahub-io/odh-serving/api/validation"
)

// The CRD's bounds are checked when a service or preset decodes, in both
// versions, with the API server's field paths and words; status is not
// judged, as the API server ignores it on create.
func TestDecodeChecksTheCRDSchema(t *testing.T) {
	for _, tc := range []struct {
		name, kind, json, want string
		v1alpha1Only           bool
	}{
		{
			name: "negative replicas", kind: "LLMInferenceService",
			json: `{"spec":{"replicas":-1}}`,
			want: "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
		},
		{
			name: "negative prefill replicas in a preset", kind: "LLMInferenceServiceConfig",
			json: `{"spec":{"prefill":{"replicas":-2}}}`,
			want: "spec.prefill.replicas: Invalid value: -2: spec.prefill.replicas in body should be greater than or equal to 0",
		},
		{
			name: "criticality not in the enum", kind: "LLMInferenceService",
			json:         `{"spec":{"model":{"uri":"hf://a/b","criticality":"Urgent"}}}`,
			want:         `spec.model.criticality: Unsupported value: "Urgent": supported values: "Critical", "Standard", "Sheddable"`,
			v1alpha1Only: true,
		},
		{name: "a wrong status is not judged", kind: "LLMInferenceService", json: `{"spec":{},"status":{"observedGeneration":-5}}`},
		{name: "valid", kind: "LLMInferenceService", json: `{"spec":{"replicas":0,"model":{"uri":"hf://a/b"}}}`},
	} {
		for _, version := range []string{"v1alpha1", "v1alpha2"} {
			if tc.v1alpha1Only && version != "v1alpha1" {
				continue
			}
			t.Run(tc.name+"/"+version, func(t *testing.T) {
				raw := []byte(`{"apiVersion":"serving.kserve.io/` + version + `","kind":"` + tc.kind + `","metadata":{"name":"x"},` + tc.json[1:])
				// The post-render already holds the object decoded: the
				// *Object forms check it without decoding it again, alike,
				// and leave it as it was.
				var obj map[string]any
				if err := utiljson.Unmarshal(raw, &obj); err != nil {
					t.Fatal(err)
				}
				_, hadStatus := obj["status"]
				var got, gotObj error
				if tc.kind == "LLMInferenceService" {
					_, errs := validation.DecodeService(version, raw)
					got = errs.ToAggregate()
					_, errs = validation.DecodeServiceObject(version, raw, obj)
					gotObj = errs.ToAggregate()
				} else {
					_, errs := validation.DecodeConfig(version, raw)
					got = errs.ToAggregate()
					_, errs = validation.DecodeConfigObject(version, raw, obj)
					gotObj = errs.ToAggregate()
				}
				if fmt.Sprint(got) != fmt.Sprint(gotObj) {
					t.Errorf("from the decoded object: %v; from the JSON: %v", gotObj, got)
				}
				if _, has := obj["status"]; has != hadStatus {
					t.Errorf("the check changed the caller's object: status there %v, was %v", has, hadStatus)
				}
				switch {
				case tc.want == "" && got != nil:
					t.Errorf("refused a valid object: %v", got)
				case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
					t.Errorf("error %v, want one containing %q", got, tc.want)
				}
			})
		}
	}
	if errs := validation.ValidateSchema("Pod", "v1", []byte(`{}`)); len(errs) != 1 || !strings.Contains(errs[0].Error(), `kind: Unsupported value: "Pod"`) {
		t.Errorf("a kind without a CRD: %v; want one error naming the kind", errs)
	}
	if errs := validation.ValidateSchema("LLMInferenceService", "v1", []byte(`{}`)); len(errs) != 1 || !strings.Contains(errs[0].Error(), "apiVersion") {
		t.Errorf("an unserved version: %v; want one error naming apiVersion", errs)
	}
}

// Several schema errors come in the order of their field paths, whatever
// order the validator found them in: the same input gives the same message.
func TestSchemaErrorsHaveOneOrder(t *testing.T) {
	raw := []byte(`{"metadata":null,"spec":{"replicas":-1,"prefill":{"replicas":-2},"model":{"uri":"hf://a/b","criticality":"Urgent"}}}`)
	first := validation.ValidateSchema("LLMInferenceService", "v1alpha1", raw)
	if len(first) < 3 {
		t.Fatalf("want at least 3 errors, got %v", first)
	}
	for i := 1; i < len(first); i++ {
		if first[i-1].Field > first[i].Field {
			t.Errorf("errors out of order: %s before %s", first[i-1].Field, first[i].Field)
		}
	}
	for range 50 {
		if again := validation.ValidateSchema("LLMInferenceService", "v1alpha1", raw); again.ToAggregate().Error() != first.ToAggregate().Error() {
			t.Fatalf("same input, another message:\n%v\n%v", first.ToAggregate(), again.ToAggregate())
		}
	}
}

// The generated schemas the validators are built from are the CRDs'
// schemas: what spec.Schema's decoder reads from api/crds/schemas, for
// every served version and no other.
func TestGeneratedSchemasAreTheCRDs(t *testing.T) {
	want := 0
	for _, kind := range []string{"LLMInferenceService", "LLMInferenceServiceConfig"} {
		versions, err := api.ServedSchemas(kind)
		if err != nil {
			t.Fatal(err)
		}
		for version, raw := range versions {
			want++
			build, ok := validation.GeneratedSchemas[kind+"/"+version]
			if !ok {
				t.Errorf("%s %s is served but has no generated schema; run make generate", kind, version)
				continue
			}
			decoded := &spec.Schema{}
			if err := decoded.UnmarshalJSON(raw); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(build(), decoded) {
				t.Errorf("%s %s: the generated schema differs from the JSON's; run make generate", kind, version)
			}
		}
	}
	if len(validation.GeneratedSchemas) != want {
		t.Errorf("%d generated schemas for %d served versions", len(validation.GeneratedSchemas), want)
	}
}
