// Package v1alpha1 is the modelserving.opendatahub.io/v1alpha1 API that
// `odh-serving api-server` serves as a Kubernetes extension (aggregated) API
// for Models-as-a-Service (MaaS): Model, TierReview, TokenRequest and
// TokenRevocation.
//
// None of these kinds is stored. Models are a read-only view of the
// LLMInferenceServices published to MaaS, computed from the server's
// informer cache; the other three are queries answered on create, like
// Kubernetes' TokenReview and TokenRequest: the response is the request
// with its status filled in. See internal/apiserver for the design.
//
// +kubebuilder:object:generate=true
// +k8s:openapi-gen=true
// +groupName=modelserving.opendatahub.io
package v1alpha1
