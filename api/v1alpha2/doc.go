// Package v1alpha2 holds the stored version of the serving.kserve.io API that
// odh-serving reconciles: LLMInferenceService and LLMInferenceServiceConfig.
//
// v1alpha2 is the conversion hub. The served v1alpha1 version converts to and
// from it without loss (see package v1alpha1). The field names follow KServe's
// API so that a user's existing KServe YAML applies unchanged.
//
// The embedded pod specs and the HTTPRoute spec are partial templates that
// presets fill in, so the CRD stores them without a schema
// (x-kubernetes-preserve-unknown-fields) and keeps every CRD small enough for
// client-side apply. The validating webhook decodes them strictly instead; see
// package validation.
//
// +kubebuilder:object:generate=true
// +groupName=serving.kserve.io
package v1alpha2
