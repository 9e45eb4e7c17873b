package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// LLMInferenceService runs one large language model behind the Gateway API
// Inference Extension: the model-server workloads, the endpoint picker
// (scheduler), the InferencePool and the HTTPRoute.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:path=llminferenceservices,shortName=llmisvc
// +kubebuilder:printcolumn:name="URL",type="string",JSONPath=".status.url"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="URLs",type="string",JSONPath=".status.addresses[*].url",priority=1
type LLMInferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LLMInferenceServiceSpec   `json:"spec,omitempty"`
	Status LLMInferenceServiceStatus `json:"status,omitempty"`
}

// LLMInferenceServiceList is a list of LLMInferenceService.
//
// +kubebuilder:object:root=true
type LLMInferenceServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LLMInferenceService `json:"items"`
}

// LLMInferenceServiceConfig is a preset: a partial LLMInferenceServiceSpec that
// services inherit through spec.baseRefs, or that odh-serving applies by shape
// (the well-known presets). String fields may hold Go templates that are
// evaluated against the merged service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:path=llminferenceserviceconfigs,shortName=llmisvcconfig
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type LLMInferenceServiceConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LLMInferenceServiceSpec         `json:"spec,omitempty"`
	Status LLMInferenceServiceConfigStatus `json:"status,omitempty"`
}

// LLMInferenceServiceConfigList is a list of LLMInferenceServiceConfig.
//
// +kubebuilder:object:root=true
type LLMInferenceServiceConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LLMInferenceServiceConfig `json:"items"`
}

// LLMInferenceServiceSpec is the desired state of a service, and the partial
// state a preset contributes.
//
// +kubebuilder:validation:XValidation:rule="!has(self.scaling) || !has(self.prefill) || !has(self.prefill.scaling) || has(self.scaling.keda) == has(self.prefill.scaling.keda)",message="decode and prefill must use the same scaling mode (wva or keda)"
// +kubebuilder:validation:XValidation:rule="!has(self.scaling) || !has(self.prefill) || !has(self.prefill.scaling) || !has(self.scaling.wva) || !has(self.prefill.scaling.wva) || has(self.scaling.wva.hpa) == has(self.prefill.scaling.wva.hpa)",message="decode and prefill must use the same actuator backend (hpa or keda)"
type LLMInferenceServiceSpec struct {
	// Model is the model to serve. Presets may leave it empty.
	// +optional
	Model LLMModelSpec `json:"model,omitzero"`

	// WorkloadSpec is the main workload: the only one for a single service,
	// the decode side when prefill is set.
	WorkloadSpec `json:",inline"`

	// Prefill, when set, disaggregates serving into a prefill workload
	// beside the decode workload described by the fields above.
	// +optional
	Prefill *WorkloadSpec `json:"prefill,omitempty"`

	// Router says how the service is reached: HTTPRoute, Gateway and the
	// inference scheduler.
	// +optional
	Router *RouterSpec `json:"router,omitempty"`

	// BaseRefs names LLMInferenceServiceConfig presets to inherit, in order;
	// a later entry overrides an earlier one and the service overrides all.
	// +optional
	BaseRefs []corev1.LocalObjectReference `json:"baseRefs,omitempty"`

	// KServeExtensions are the fields KServe added to the spec; they are
	// inlined, so they sit beside the fields above.
	KServeExtensions `json:",inline"`
}

// LLMModelSpec is the model and how it is named to clients.
type LLMModelSpec struct {
	// URI is where the model is stored: hf://, s3://, pvc:// or oci://.
	// +optional
	URI string `json:"uri,omitempty"`

	// Name is the model name clients send in requests. It defaults to the
	// service's metadata.name.
	// +optional
	Name *string `json:"name,omitempty"`

	// LoRA lists adapters served on top of the base model.
	// +optional
	LoRA *LoRASpec `json:"lora,omitempty"`

	// Confidential is KServe's confidential serving of encrypted model
	// artifacts. It is accepted and kept, and not acted on: render and the
	// webhook warn.
	// +optional
	Confidential *ConfidentialSpec `json:"confidential,omitempty"`
}

// LoRASpec lists LoRA adapters and the vLLM limits for serving them.
type LoRASpec struct {
	// Adapters are loaded beside the base model, with --enable-lora and
	// --lora-modules.
	// +optional
	Adapters []LoRAAdapter `json:"adapters,omitempty"`

	LoRALimits `json:",inline"`
}

// LoRALimits are vLLM's limits for serving LoRA adapters; both API versions
// share them.
type LoRALimits struct {
	// MaxRank is the highest adapter rank served (vLLM --max-lora-rank).
	// Unset, vLLM's default applies.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxRank *int32 `json:"maxRank,omitempty"`

	// MaxAdapters is how many adapters a batch may use at once (vLLM
	// --max-loras). Unset, vLLM's default applies.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxAdapters *int32 `json:"maxAdapters,omitempty"`

	// MaxCPUAdapters is how many adapters are cached in CPU memory (vLLM
	// --max-cpu-loras). Unset, vLLM's default applies.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxCPUAdapters *int32 `json:"maxCpuAdapters,omitempty"`
}

// LoRAAdapter is one LoRA adapter. KServe types an adapter as a whole model
// spec, so every field of LLMModelSpec is accepted here too.
type LoRAAdapter struct {
	// URI is where the adapter is stored: hf://, s3:// or pvc://.
	// +optional
	URI string `json:"uri,omitempty"`
	// Name is the name clients use for the adapter; it is required and
	// unique among the adapters.
	// +optional
	Name *string `json:"name,omitempty"`
	// LoRA is accepted and kept, and not acted on (an adapter has no
	// adapters of its own): render and the webhook warn. The type is
	// recursive, so the CRD keeps it without a schema; the webhook and
	// render decode it strictly.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	LoRA *LoRASpec `json:"lora,omitempty"`
	// Confidential is accepted and kept, and not acted on: the adapter is
	// downloaded as it is, and render and the webhook warn when it is
	// enabled.
	// +optional
	Confidential *ConfidentialSpec `json:"confidential,omitempty"`
}

// WorkloadSpec describes one model-server workload: a Deployment for a single
// node, or a LeaderWorkerSet when worker is set.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.replicas) && has(self.scaling))",message="replicas and scaling are mutually exclusive; use scaling for autoscaled deployments or replicas for static deployments"
type WorkloadSpec struct {
	// Replicas is the number of serving replicas (LWS groups when multi-node).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Scaling autoscales the workload: odh-serving renders the actuator
	// (an HPA or a KEDA ScaledObject) and leaves the workload's replicas
	// to it. Exclusive with replicas.
	// +optional
	Scaling *ScalingSpec `json:"scaling,omitempty"`

	// Parallelism configures tensor, pipeline, data and expert parallelism.
	// +optional
	Parallelism *ParallelismSpec `json:"parallelism,omitempty"`

	// Labels are added to the workload's pods; the labels odh-serving
	// selects them by keep their values.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the workload's pods. On the main workload,
	// serving.kserve.io/model-based-routing-enabled: "true" also turns on
	// the route's model header rules, as on the service itself.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Template is the serving pod (the leader pod when multi-node). It is a
	// partial pod spec merged over the presets; containers merge by name.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template *corev1.PodSpec `json:"template,omitempty"`

	// Worker is the worker pod of a multi-node LeaderWorkerSet. Its presence
	// makes the workload multi-node.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Worker *corev1.PodSpec `json:"worker,omitempty"`

	// KVCacheOffloading offloads vLLM's KV cache to CPU memory and, in
	// order, to file-system tiers (vLLM's OffloadingConnector, set with
	// --kv-transfer-config).
	// +optional
	KVCacheOffloading *KVCacheOffloadingSpec `json:"kvCacheOffloading,omitempty"`

	// RolloutStrategy bounds a rolling update of the workload: the
	// Deployment's rollingUpdate, or the LeaderWorkerSet's.
	// +optional
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// ParallelismSpec configures how the model is split across devices and nodes.
type ParallelismSpec struct {
	// Tensor is the tensor-parallel size.
	// +optional
	Tensor *int32 `json:"tensor,omitempty"`
	// Pipeline is the pipeline-parallel size (nodes per group).
	// +optional
	Pipeline *int32 `json:"pipeline,omitempty"`
	// Data is the data-parallel size across the group.
	// +optional
	Data *int32 `json:"data,omitempty"`
	// DataLocal is the data-parallel size on one node.
	// +optional
	DataLocal *int32 `json:"dataLocal,omitempty"`
	// DataRPCPort is the data-parallel RPC port.
	// +optional
	DataRPCPort *int32 `json:"dataRPCPort,omitempty"`
	// Expert turns on expert parallelism.
	// +optional
	Expert bool `json:"expert,omitempty"`
}

// RouterSpec says how traffic reaches the service.
type RouterSpec struct {
	// Route is the HTTPRoute. An empty object asks for a managed route.
	// +optional
	Route *GatewayRoutesSpec `json:"route,omitempty"`

	// Gateway names the Gateways the route attaches to. An empty object
	// means the platform's default gateway.
	// +optional
	Gateway *GatewaySpec `json:"gateway,omitempty"`

	// Ingress is accepted for compatibility with KServe and not acted on.
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`

	// Scheduler is the inference scheduler (endpoint picker) and its
	// InferencePool. An empty object asks for a managed scheduler.
	// +optional
	Scheduler *SchedulerSpec `json:"scheduler,omitempty"`
}

// GatewayRoutesSpec holds the route configuration.
type GatewayRoutesSpec struct {
	// HTTP configures the HTTPRoute.
	// +optional
	HTTP *HTTPRouteSpec `json:"http,omitempty"`

	// Group is KServe's routing group: services of one group share weighted
	// traffic. It is accepted and kept, and not acted on: render and the
	// webhook warn.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
	Group *string `json:"group,omitempty"`

	// Weight is this service's share of its routing group's traffic, as a
	// Gateway API backendRef weight. Accepted and kept, not acted on.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	Weight *int32 `json:"weight,omitempty"`
}

// HTTPRouteSpec is either references to HTTPRoutes the user manages, or the
// spec of a route odh-serving manages; not both.
type HTTPRouteSpec struct {
	// Refs names existing HTTPRoutes in the service's namespace.
	// +optional
	Refs []corev1.LocalObjectReference `json:"refs,omitempty"`

	// Spec is the spec of the managed HTTPRoute. String fields may hold
	// templates, so the CRD does not constrain it; the webhook decodes it
	// strictly.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Spec *gatewayv1.HTTPRouteSpec `json:"spec,omitempty"`
}

// GatewaySpec names Gateways.
type GatewaySpec struct {
	// Refs are existing Gateways the managed route attaches to.
	// +optional
	Refs []GatewayObjectReference `json:"refs,omitempty"`
}

// IngressSpec names Ingresses. It is kept for KServe compatibility.
type IngressSpec struct {
	// Refs are existing Ingresses.
	// +optional
	Refs []UntypedObjectReference `json:"refs,omitempty"`
}

// UntypedObjectReference names an object by name and namespace.
type UntypedObjectReference struct {
	// Name of the object.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace of the object; the service's namespace when empty.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// GatewayObjectReference names a Gateway and, optionally, one listener.
type GatewayObjectReference struct {
	UntypedObjectReference `json:",inline"`
	// SectionName selects one listener of the Gateway.
	// +optional
	SectionName *string `json:"sectionName,omitempty"`
}

// SchedulerSpec is the inference scheduler (endpoint picker, EPP).
type SchedulerSpec struct {
	// Pool is the InferencePool: a spec for a managed pool, or a reference
	// to an existing one.
	// +optional
	Pool *InferencePoolSpec `json:"pool,omitempty"`

	// Template is the endpoint picker's pod, merged over the presets.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template *corev1.PodSpec `json:"template,omitempty"`

	SchedulerExtensions `json:",inline"`
}

// InferencePoolSpec is either the spec of a managed InferencePool or a
// reference to an existing one.
type InferencePoolSpec struct {
	// Spec is a partial GIE v1 InferencePool spec, merged over the presets.
	// +optional
	Spec *PoolSpec `json:"spec,omitempty"`

	// Ref names an existing InferencePool; no pool or scheduler is managed.
	// +optional
	Ref *corev1.LocalObjectReference `json:"ref,omitempty"`
}

// PoolSpec has the shape of the GIE v1 InferencePool spec
// (inference.networking.k8s.io/v1). Every field is optional because presets
// and services each contribute part of it.
type PoolSpec struct {
	// Selector selects the model-server pods.
	// +optional
	Selector *PoolSelector `json:"selector,omitempty"`

	// TargetPorts are the model-server ports.
	// +optional
	TargetPorts []PoolPort `json:"targetPorts,omitempty"`

	// EndpointPickerRef is the endpoint picker that serves the pool.
	// +optional
	EndpointPickerRef *EndpointPickerRef `json:"endpointPickerRef,omitempty"`
}

// PoolSelector selects pods by labels.
type PoolSelector struct {
	// MatchLabels are the labels a pod must have.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// PoolPort is a port number.
type PoolPort struct {
	// Number is the port.
	// +optional
	Number int32 `json:"number,omitempty"`
}

// EndpointPickerRef references the endpoint picker of a pool.
type EndpointPickerRef struct {
	// Group of the referent; the core group when empty.
	// +optional
	Group *string `json:"group,omitempty"`
	// Kind of the referent; Service when empty.
	// +optional
	Kind *string `json:"kind,omitempty"`
	// Name of the referent.
	// +optional
	Name string `json:"name,omitempty"`
	// Port of the referent.
	// +optional
	Port *PoolPort `json:"port,omitempty"`
	// FailureMode is FailOpen or FailClose.
	// +optional
	FailureMode *string `json:"failureMode,omitempty"`
}
