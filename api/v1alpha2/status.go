package v1alpha2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types of an LLMInferenceService. Ready is WorkloadsReady and
// RouterReady together; the others refine them.
const (
	ConditionReady           = "Ready"
	ConditionWorkloadsReady  = "WorkloadsReady"
	ConditionRouterReady     = "RouterReady"
	ConditionPresetsCombined = "PresetsCombined"
)

// LLMInferenceServiceStatus is the observed state of a service.
type LLMInferenceServiceStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are the service's conditions; Ready sums them up.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL is the first external URL of the service.
	// +optional
	URL string `json:"url,omitempty"`

	// Addresses are every URL the service is reachable at, sorted.
	// +optional
	Addresses []Address `json:"addresses,omitempty"`

	// InferencePool is the pool that serves the service, so clients need
	// not guess it from naming rules.
	// +optional
	InferencePool *InferencePoolStatus `json:"inferencePool,omitempty"`

	// Annotations carry extra observed state.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Address is one URL of the service.
type Address struct {
	// Name says which address this is, such as gateway-external or
	// gateway-internal.
	// +optional
	Name string `json:"name,omitempty"`
	// URL is the address.
	URL string `json:"url"`
}

// InferencePoolStatus names the pool in use and the migration phase of the
// route between the v1alpha2 and v1 InferencePool APIs.
type InferencePoolStatus struct {
	// Name of the InferencePool.
	Name string `json:"name"`
	// Group of the InferencePool the route sends traffic to:
	// inference.networking.k8s.io or inference.networking.x-k8s.io.
	Group string `json:"group"`
	// MigrationPhase is alpha2, dual, v1 or retired.
	// +optional
	MigrationPhase string `json:"migrationPhase,omitempty"`
}
