package webhook_test

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
)

// The webhook checks the CRD's schema too, so it refuses what the API
// server would; but an object stored before a bound existed can still have
// its finalizers removed and be deleted.
func TestValidatorChecksTheSchemaButLetsOldObjectsGo(t *testing.T) {
	obj := func(extra string) []byte {
		return []byte(`{"apiVersion":"serving.kserve.io/v1alpha2","kind":"LLMInferenceService",` +
			`"metadata":{"name":"s","namespace":"ns"` + extra + `},"spec":{"replicas":-1,"model":{"uri":"hf://a/b"}}}`)
	}
	request := func(op admissionv1.Operation, newObj, oldObj []byte) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: op, Name: "s", Namespace: "ns",
			Kind:   metav1.GroupVersionKind{Group: "serving.kserve.io", Version: "v1alpha2", Kind: "LLMInferenceService"},
			Object: runtime.RawExtension{Raw: newObj}, OldObject: runtime.RawExtension{Raw: oldObj},
		}}
	}
	const want = "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
	resp := webhook.Validator{}.Handle(t.Context(), request(admissionv1.Create, obj(""), nil))
	if resp.Allowed || !strings.Contains(resp.Result.Message, want) {
		t.Errorf("create: allowed %v, %v; want a refusal naming %q", resp.Allowed, resp.Result, want)
	}
	changed := []byte(strings.Replace(string(obj("")), `"replicas":-1`, `"replicas":-1,"baseRefs":[{"name":"p"}]`, 1))
	resp = webhook.Validator{}.Handle(t.Context(), request(admissionv1.Update, changed, obj("")))
	if resp.Allowed || !strings.Contains(resp.Result.Message, want) {
		t.Errorf("update of the spec: allowed %v, %v; want a refusal naming %q", resp.Allowed, resp.Result, want)
	}
	// A spec change while the service is being deleted is let through too.
	deleting := []byte(strings.Replace(string(changed), `"namespace":"ns"`, `"namespace":"ns","deletionTimestamp":"2026-11-24T00:00:00Z"`, 1))
	old := obj(`,"finalizers":["serving.kserve.io/llmisvc"]`)
	for name, newObj := range map[string][]byte{"finalizer removed": obj(""), "being deleted": deleting} {
		if resp := (webhook.Validator{}).Handle(t.Context(), request(admissionv1.Update, newObj, old)); !resp.Allowed {
			t.Errorf("%s: refused: %v", name, resp.Result)
		}
	}
}

// An update is judged by its kind's rules: a service may not resize a
// multi-node group, a preset may not gain baseRefs; a preset stored with
// baseRefs (before the rule) can still lose its finalizers.
func TestValidatorJudgesUpdatesByKind(t *testing.T) {
	update := func(kind, newObj, oldObj string) admission.Response {
		return webhook.Validator{}.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Update, Name: "s", Namespace: "ns",
			Kind:   metav1.GroupVersionKind{Group: "serving.kserve.io", Version: "v1alpha2", Kind: kind},
			Object: runtime.RawExtension{Raw: []byte(newObj)}, OldObject: runtime.RawExtension{Raw: []byte(oldObj)},
		}})
	}
	svc := func(pipeline string) string {
		return `{"apiVersion":"serving.kserve.io/v1alpha2","kind":"LLMInferenceService","metadata":{"name":"s","namespace":"ns"},` +
			`"spec":{"model":{"uri":"hf://a/b"},"parallelism":{"pipeline":` + pipeline + `},` +
			`"template":{"containers":[{"name":"main"}]},"worker":{"containers":[{"name":"main"}]}}}`
	}
	if resp := update("LLMInferenceService", svc("3"), svc("2")); resp.Allowed || !strings.Contains(resp.Result.Message, "spec.parallelism") {
		t.Errorf("resize of a multi-node group: allowed %v, %v; want a refusal naming spec.parallelism", resp.Allowed, resp.Result)
	}
	cfg := func(metadata, spec string) string {
		return `{"apiVersion":"serving.kserve.io/v1alpha2","kind":"LLMInferenceServiceConfig","metadata":{"name":"s","namespace":"ns"` +
			metadata + `},"spec":` + spec + `}`
	}
	withRefs := cfg("", `{"baseRefs":[{"name":"p"}]}`)
	if resp := update("LLMInferenceServiceConfig", withRefs, cfg("", `{}`)); resp.Allowed || !strings.Contains(resp.Result.Message, "spec.baseRefs") {
		t.Errorf("a preset gaining baseRefs: allowed %v, %v; want a refusal naming spec.baseRefs", resp.Allowed, resp.Result)
	}
	if resp := update("LLMInferenceServiceConfig", withRefs, cfg(`,"finalizers":["f"]`, `{"baseRefs":[{"name":"p"}]}`)); !resp.Allowed {
		t.Errorf("a finalizer removed from a stored preset with baseRefs: refused: %v", resp.Result)
	}
}

// The webhook applies the platform's trigger policy, as render does, to
// services and presets, created or updated: a trigger reaches only the
// allowed addresses.
func TestValidatorAppliesTheTriggerPolicy(t *testing.T) {
	v := webhook.Validator{Options: engine.Options{KEDAAllowedServerAddresses: []string{"https://thanos.monitoring.svc:9091"}}}
	object := func(kind, address string) []byte {
		return []byte(`{"apiVersion":"serving.kserve.io/v1alpha2","kind":"` + kind + `","metadata":{"name":"s","namespace":"ns"},` +
			`"spec":{"model":{"uri":"hf://a/b"},"scaling":{"maxReplicas":2,"keda":{"triggers":[{"type":"prometheus",` +
			`"metadata":{"serverAddress":"` + address + `","query":"up","threshold":"1"}}]}}}}`)
	}
	const want = `spec.scaling.keda.triggers[0].metadata.serverAddress: Forbidden: "https://attacker.example.com" is not an address`
	for _, kind := range []string{"LLMInferenceService", "LLMInferenceServiceConfig"} {
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			req := func(address string) admission.Request {
				return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
					Operation: op, Name: "s", Namespace: "ns",
					Kind:   metav1.GroupVersionKind{Group: "serving.kserve.io", Version: "v1alpha2", Kind: kind},
					Object: runtime.RawExtension{Raw: object(kind, address)}, OldObject: runtime.RawExtension{Raw: object(kind, "https://thanos.monitoring.svc:9091/x")},
				}}
			}
			if resp := v.Handle(t.Context(), req("https://attacker.example.com")); resp.Allowed || !strings.Contains(resp.Result.Message, want) {
				t.Errorf("%s %s: allowed %v, %v; want a refusal naming %q", op, kind, resp.Allowed, resp.Result, want)
			}
			if resp := v.Handle(t.Context(), req("https://thanos.monitoring.svc:9091")); !resp.Allowed {
				t.Errorf("%s %s with the allowed address: refused: %v", op, kind, resp.Result)
			}
		}
	}
}
