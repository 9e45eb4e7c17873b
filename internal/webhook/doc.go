// Package webhook serves the admission and conversion webhooks of the
// serving.kserve.io API:
//   - /validate admits LLMInferenceService and LLMInferenceServiceConfig in
//     both served versions. It decodes the request strictly, so a typo in a
//     pod spec or route spec is rejected with its field path, then applies
//     the rules of package validation to the v1alpha2 form.
//   - /replicas keeps the live count of a workload an autoscaler scales
//     (labelled convention.LabelMinReplicas, as static mode renders it) when
//     a manifest write drops its spec.replicas, raised to the autoscaler's
//     minimum (Replicas).
//   - /convert converts between v1alpha1 and v1alpha2 through the hub.
package webhook
