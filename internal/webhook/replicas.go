package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// ReplicasPath is where the replicas webhook is served.
const ReplicasPath = "/replicas"

// MutatingConfigurationName names the MutatingWebhookConfiguration that
// sends the scaled workloads to ReplicasPath (the chart's, in static mode).
const MutatingConfigurationName = "odh-serving-replicas"

// Replicas keeps the count of each workload labelled
// convention.LabelMinReplicas, one an autoscaler scales, off every write
// but its scale subresource, where autoscalers (and kubectl scale) write:
// an update of the workload itself keeps the live spec.replicas, and a
// create starts at the label's minimum, each raised to that minimum.
//
// Why: in static mode Helm applies the workloads. The upgrade that adds
// spec.scaling to a service renders its workloads without spec.replicas
// (the count is the autoscaler's from then on), and Helm's three-way merge,
// like server-side apply and kubectl apply, removes a field the new
// manifest drops: the API server would default it to one replica until the
// autoscaler acts. Here the write keeps the live count instead.
type Replicas struct{}

var _ admission.Handler = Replicas{}

// workloadReplicas is what the webhook reads of a Deployment or a
// LeaderWorkerSet.
type workloadReplicas struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Replicas *int64 `json:"replicas"`
	} `json:"spec"`
}

// Handle decides one admission request.
func (Replicas) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.SubResource != "" || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return admission.Allowed("")
	}
	what := fmt.Sprintf("%s %s/%s", req.Kind.Kind, req.Namespace, req.Name)
	var obj workloadReplicas
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s: %w", what, err))
	}
	value, labelled := obj.Metadata.Labels[convention.LabelMinReplicas]
	if !labelled {
		return admission.Allowed("")
	}
	floor, err := strconv.ParseInt(value, 10, 32)
	if err != nil || floor < 0 {
		return admission.Denied(fmt.Sprintf("%s: label %s=%q is not a replica count", what, convention.LabelMinReplicas, value))
	}
	var asked int64
	if obj.Spec.Replicas != nil {
		asked = *obj.Spec.Replicas
	}
	want := max(asked, floor)
	if req.Operation == admissionv1.Update {
		var old workloadReplicas
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s: the stored object: %w", what, err))
		}
		if old.Spec.Replicas != nil {
			want = max(*old.Spec.Replicas, floor)
		}
	}
	if obj.Spec.Replicas != nil && want == asked {
		return admission.Allowed("")
	}
	return admission.Patched("", jsonpatch.NewOperation("add", "/spec/replicas", want)).WithWarnings(
		fmt.Sprintf("%s: spec.replicas kept at %d, not %d: an autoscaler scales it (label %s=%s)", what, want, asked, convention.LabelMinReplicas, value))
}
