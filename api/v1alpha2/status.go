package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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

	// Conditions are the service's conditions; Ready sums them up. Fields
	// other conditions carry, such as the severity of KServe's (knative)
	// conditions, are kept.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:items:XPreserveUnknownFields
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

	KServeStatus `json:",inline"`
}

// Address is one URL of the service.
type Address struct {
	// Name says which address this is, such as gateway-external or
	// gateway-internal.
	// +optional
	Name string `json:"name,omitempty"`
	// URL is the address.
	URL string `json:"url"`

	AddressExtensions `json:",inline"`
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

// KServeStatus are the status fields KServe's LLMInferenceService has beyond
// those above, so that a service exported from KServe with its status
// applies as it is. The controller fills appliedConfigs and workloads, and
// drops the others, which describe KServe's objects (docs/kserve-compat.md).
// The CRD keeps address, router and workloads without a schema (two copies
// of theirs would cost ~20 KiB of the services CRD); the webhook and render
// decode them strictly.
type KServeStatus struct {
	// Address is KServe's deprecated single address, never written.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Address *KServeAddress `json:"address,omitempty"`

	// Router is KServe's observed networking topology.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Router *RouterStatus `json:"router,omitempty"`

	// Workloads are the workloads the controller built, with their ready
	// replicas.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Workloads *WorkloadStatus `json:"workloads,omitempty"`

	// AppliedConfigs are the LLMInferenceServiceConfigs merged into the
	// spec by the last successful render, in merge order: the well-known
	// presets, then the baseRefs.
	// +optional
	// +listType=atomic
	AppliedConfigs []AppliedConfigRef `json:"appliedConfigs,omitempty"`
}

// AddressExtensions are the fields of KServe's addresses beyond name and
// url (knative's Addressable and KServe's origin and models).
type AddressExtensions struct {
	// CACerts is the PEM CA bundle that verifies the address.
	// +optional
	CACerts *string `json:"CACerts,omitempty"` //nolint:tagliatelle // knative's JSON name
	// Audience is the OIDC audience of the address.
	// +optional
	Audience *string `json:"audience,omitempty"`
	// Origin is the networking resource (a Gateway) that gave the address.
	// +optional
	Origin *ObjectReference `json:"origin,omitempty"`
	// Models are the model names served at the address.
	// +optional
	Models []ModelAddress `json:"models,omitempty"`
}

// KServeAddress is knative's Addressable with KServe's extensions.
type KServeAddress struct {
	// Name of the address.
	// +optional
	Name *string `json:"name,omitempty"`
	// URL of the address.
	// +optional
	URL *string `json:"url,omitempty"`

	AddressExtensions `json:",inline"`
}

// ModelAddress names a model served at an address.
type ModelAddress struct {
	// Name of the model.
	Name string `json:"name"`
}

// ObjectReference names an object of any kind, as Gateway API's does.
type ObjectReference struct {
	// Group of the referent; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// Kind of the referent.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the referent.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace of the referent.
	// +optional
	Namespace *string `json:"namespace,omitempty"`
}

// RouterStatus is KServe's observed networking topology.
type RouterStatus struct {
	// Gateways the service is attached to, with their listeners and routes.
	// +optional
	// +listType=atomic
	Gateways []ObservedGateway `json:"gateways,omitempty"`
	// Scheduler is the observed pool and endpoint picker Service.
	// +optional
	Scheduler *ObservedSchedulerStatus `json:"scheduler,omitempty"`
	// Group is the observed routing group.
	// +optional
	Group *GroupStatus `json:"group,omitempty"`
}

// ObservedGateway is a Gateway with the listeners and HTTPRoutes bound
// through it.
type ObservedGateway struct {
	ObjectReference `json:",inline"`
	// Listeners are the section names of the listeners that accepted the
	// routes.
	// +optional
	// +listType=atomic
	Listeners []string `json:"listeners,omitempty"`
	// HTTPRoutes bound through this Gateway.
	// +optional
	// +listType=atomic
	HTTPRoutes []ObjectReference `json:"httpRoutes,omitempty"`
}

// ObservedSchedulerStatus is the observed pool and endpoint picker Service.
type ObservedSchedulerStatus struct {
	// InferencePool in use.
	// +optional
	InferencePool *ObjectReference `json:"inferencePool,omitempty"`
	// Service of the endpoint picker.
	// +optional
	Service *ObjectReference `json:"service,omitempty"`
}

// GroupStatus is a routing group and its members.
type GroupStatus struct {
	// Name of the group.
	Name string `json:"name"`
	// Members of the group.
	// +optional
	// +listType=map
	// +listMapKey=name
	Members []GroupMemberStatus `json:"members,omitempty"`
}

// GroupMemberStatus is one service of a routing group.
type GroupMemberStatus struct {
	// Name of the member service.
	Name string `json:"name"`
	// Weight is its traffic weight.
	Weight int32 `json:"weight"`
	// Stopped is true when the member is stopped.
	// +optional
	Stopped bool `json:"stopped,omitempty"`
	// BackendRef is the member's backend.
	// +optional
	BackendRef *BackendReference `json:"backendRef,omitempty"`
}

// BackendReference is an ObjectReference with a port, as Gateway API's
// backendRef.
type BackendReference struct {
	// Group of the referent; empty for the core group.
	// +optional
	Group *string `json:"group,omitempty"`
	// Kind of the referent.
	// +optional
	Kind *string `json:"kind,omitempty"`
	// Name of the referent.
	Name string `json:"name"`
	// Namespace of the referent.
	// +optional
	Namespace *string `json:"namespace,omitempty"`
	// Port of the referent.
	// +optional
	Port *int32 `json:"port,omitempty"`
}

// WorkloadStatus is KServe's observed workload resources.
type WorkloadStatus struct {
	// Primary is the main (or decode) workload.
	// +optional
	Primary *ObservedWorkload `json:"primary,omitempty"`
	// Prefill is the prefill workload.
	// +optional
	Prefill *ObservedWorkload `json:"prefill,omitempty"`
	// Service fronts the primary workload.
	// +optional
	Service *corev1.TypedLocalObjectReference `json:"service,omitempty"`
	// Scheduler is the endpoint picker's Deployment.
	// +optional
	Scheduler *ObservedWorkload `json:"scheduler,omitempty"`
}

// ObservedWorkload is a workload and its ready replicas.
type ObservedWorkload struct {
	corev1.TypedLocalObjectReference `json:",inline"`
	// ReadyReplicas are the pods ready to serve.
	// +optional
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`
}

// AppliedConfigRef is an LLMInferenceServiceConfig merged into a service.
type AppliedConfigRef struct {
	// Name of the config.
	Name string `json:"name"`
	// Namespace the config was read from.
	Namespace string `json:"namespace"`
	// Source is Preset (chosen by the service's shape) or UserRef (named
	// in spec.baseRefs).
	// +kubebuilder:validation:Enum=Preset;UserRef
	Source string `json:"source"`
}

// LLMInferenceServiceConfigStatus is KServe's status of a preset: its
// conditions and the services that use it. odh-serving accepts and keeps
// it, and does not write it.
type LLMInferenceServiceConfigStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions of the preset.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:items:XPreserveUnknownFields
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Annotations carry extra observed state.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// ReferencedBy are the services that use the preset.
	// +optional
	// +listType=atomic
	ReferencedBy []UntypedObjectReference `json:"referencedBy,omitempty"`
}
