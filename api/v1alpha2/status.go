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

	// Autoscalers are the HorizontalPodAutoscalers and KEDA ScaledObjects
	// that scale the service's workloads: those odh-serving renders for
	// scaling and those others made. The controller leaves the replicas
	// of these workloads to them.
	// +optional
	// +listType=atomic
	Autoscalers []AutoscalerStatus `json:"autoscalers,omitempty"`

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

// AutoscalerStatus is an autoscaler of one of the service's workloads and
// the replica counts it reports.
type AutoscalerStatus struct {
	// Kind is HorizontalPodAutoscaler or ScaledObject.
	Kind string `json:"kind"`
	// Name of the autoscaler, in the service's namespace.
	Name string `json:"name"`
	// Target is the workload it scales.
	Target ScaleTarget `json:"target"`
	// CurrentReplicas is how many replicas the autoscaler last saw; a
	// ScaledObject's come from the HPA KEDA made for it. Unset until it
	// reports.
	// +optional
	CurrentReplicas *int32 `json:"currentReplicas,omitempty"`
	// DesiredReplicas is how many replicas it last asked for. Unset until
	// it reports.
	// +optional
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`
}

// ScaleTarget names a workload of the service.
type ScaleTarget struct {
	// Kind is Deployment or LeaderWorkerSet.
	Kind string `json:"kind"`
	// Name of the workload.
	Name string `json:"name"`
}
