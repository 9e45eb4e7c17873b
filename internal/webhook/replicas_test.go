package webhook_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/opendatahub-io/odh-serving/internal/webhook"
)

// The replicas webhook keeps a labelled workload's live count on an update
// (raised to the label's minimum), starts it at the minimum on a create,
// and leaves alone what is not labelled, the scale subresource and a bad
// label's write (refused, naming the label).
func TestReplicasKeepsTheLiveCount(t *testing.T) {
	deployment := func(floor string, replicas int) []byte {
		labels := ""
		if floor != "" {
			labels = `,"labels":{"odh-serving.opendatahub.io/min-replicas":"` + floor + `"}`
		}
		return fmt.Appendf(nil, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","namespace":"ns"%s},"spec":{"replicas":%d}}`, labels, replicas)
	}
	request := func(op admissionv1.Operation, subresource string, newObj, oldObj []byte) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: op, Name: "w", Namespace: "ns", SubResource: subresource,
			Kind:   metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			Object: runtime.RawExtension{Raw: newObj}, OldObject: runtime.RawExtension{Raw: oldObj},
		}}
	}
	for _, c := range []struct {
		name string
		req  admission.Request
		want int64 // -1: admitted unchanged
	}{
		{"an update that drops the count (one by default) keeps the live 3", request(admissionv1.Update, "", deployment("2", 1), deployment("", 3)), 3},
		{"an update keeps the live 3 when it asks for more", request(admissionv1.Update, "", deployment("2", 4), deployment("2", 3)), 3},
		{"an update raises a live 1 to the minimum 2", request(admissionv1.Update, "", deployment("2", 1), deployment("", 1)), 2},
		{"an update that leaves the count passes", request(admissionv1.Update, "", deployment("2", 5), deployment("2", 5)), -1},
		{"a create starts at the minimum", request(admissionv1.Create, "", deployment("2", 1), nil), 2},
		{"a create above the minimum passes", request(admissionv1.Create, "", deployment("2", 3), nil), -1},
		{"an unlabelled workload passes", request(admissionv1.Update, "", deployment("", 1), deployment("2", 3)), -1},
		{"the scale subresource passes", request(admissionv1.Update, "scale", deployment("2", 1), deployment("2", 3)), -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := webhook.Replicas{}.Handle(t.Context(), c.req)
			if !resp.Allowed {
				t.Fatalf("refused: %v", resp.Result)
			}
			if c.want < 0 {
				if len(resp.Patches) > 0 {
					t.Errorf("patched %v, want the write unchanged", resp.Patches)
				}
				return
			}
			if len(resp.Patches) != 1 || resp.Patches[0].Path != "/spec/replicas" {
				t.Fatalf("patches %v, want /spec/replicas set to %d", resp.Patches, c.want)
			}
			got, err := json.Marshal(resp.Patches[0].Value)
			if err != nil || string(got) != fmt.Sprint(c.want) {
				t.Errorf("spec.replicas patched to %s, want %d", got, c.want)
			}
			if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "Deployment ns/w: spec.replicas kept at") {
				t.Errorf("warnings %v, want one naming the Deployment", resp.Warnings)
			}
		})
	}
	resp := webhook.Replicas{}.Handle(t.Context(), request(admissionv1.Update, "", deployment("two", 1), deployment("", 3)))
	if want := `Deployment ns/w: label odh-serving.opendatahub.io/min-replicas="two" is not a replica count`; resp.Allowed || resp.Result.Message != want {
		t.Errorf("a bad label: allowed %v, %v; want a refusal %q", resp.Allowed, resp.Result, want)
	}
}
