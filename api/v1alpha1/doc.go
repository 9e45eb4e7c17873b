// Package v1alpha1 is the served, not stored, version of the serving.kserve.io
// API. It matches KServe's v1alpha1 LLMInferenceService, whose scheduler pool
// spec has the shape of the GIE v1alpha2 InferencePool, so that existing
// KServe manifests apply unchanged.
//
// Everything converts to and from the v1alpha2 hub without loss:
//   - spec.model.criticality, which v1alpha2 lacks, is kept in the annotation
//     serving.kserve.io/criticality of the stored object;
//   - a v1alpha2 pool spec that the v1alpha1 shape cannot hold (several target
//     ports, an empty selector) is kept whole in the annotation
//     serving.kserve.io/conversion-pool-spec of the v1alpha1 object, and is
//     restored on the way back unless the v1alpha1 pool spec was edited.
//
// Types that are the same in both versions are v1alpha2's.
//
// +kubebuilder:object:generate=true
// +groupName=serving.kserve.io
package v1alpha1
