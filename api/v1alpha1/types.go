package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// LLMInferenceService is the v1alpha1 form of v1alpha2.LLMInferenceService.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=llminferenceservices,shortName=llmisvc
// +kubebuilder:printcolumn:name="URL",type="string",JSONPath=".status.url"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="URLs",type="string",JSONPath=".status.addresses[*].url",priority=1
type LLMInferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LLMInferenceServiceSpec            `json:"spec,omitempty"`
	Status v1alpha2.LLMInferenceServiceStatus `json:"status,omitempty"`
}

// LLMInferenceServiceList is a list of LLMInferenceService.
//
// +kubebuilder:object:root=true
type LLMInferenceServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LLMInferenceService `json:"items"`
}

// LLMInferenceServiceConfig is the v1alpha1 form of
// v1alpha2.LLMInferenceServiceConfig.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=llminferenceserviceconfigs,shortName=llmisvcconfig
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type LLMInferenceServiceConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LLMInferenceServiceSpec                  `json:"spec,omitempty"`
	Status v1alpha2.LLMInferenceServiceConfigStatus `json:"status,omitempty"`
}

// LLMInferenceServiceConfigList is a list of LLMInferenceServiceConfig.
//
// +kubebuilder:object:root=true
type LLMInferenceServiceConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LLMInferenceServiceConfig `json:"items"`
}

// LLMInferenceServiceSpec is v1alpha2.LLMInferenceServiceSpec with the
// v1alpha1 model (criticality) and scheduler pool shapes.
//
// +kubebuilder:validation:XValidation:rule="!has(self.scaling) || !has(self.prefill) || !has(self.prefill.scaling) || has(self.scaling.keda) == has(self.prefill.scaling.keda)",message="decode and prefill must use the same scaling mode (wva or keda)"
// +kubebuilder:validation:XValidation:rule="!has(self.scaling) || !has(self.prefill) || !has(self.prefill.scaling) || !has(self.scaling.wva) || !has(self.prefill.scaling.wva) || has(self.scaling.wva.hpa) == has(self.prefill.scaling.wva.hpa)",message="decode and prefill must use the same actuator backend (hpa or keda)"
type LLMInferenceServiceSpec struct {
	// Model is the model to serve.
	// +optional
	Model LLMModelSpec `json:"model,omitzero"`

	v1alpha2.WorkloadSpec `json:",inline"`

	// Prefill, when set, disaggregates serving into a prefill workload.
	// +optional
	Prefill *v1alpha2.WorkloadSpec `json:"prefill,omitempty"`

	// Router says how the service is reached.
	// +optional
	Router *RouterSpec `json:"router,omitempty"`

	// BaseRefs names presets to inherit, in order; later entries win.
	// +optional
	BaseRefs []corev1.LocalObjectReference `json:"baseRefs,omitempty"`

	KServeExtensions `json:",inline"`
}

// KServeExtensions is v1alpha2.KServeExtensions with the v1alpha1 model spec
// (criticality) in the speculator, as KServe's v1alpha1 has it.
type KServeExtensions struct {
	v1alpha2.RuntimeExtensions `json:",inline"`

	// Speculator configures speculative decoding.
	// +optional
	Speculator *SpeculatorSpec `json:"speculator,omitempty"`
}

// SpeculatorSpec is v1alpha2.SpeculatorSpec with the v1alpha1 model spec.
// The criticality of its model is kept in the annotation
// serving.kserve.io/conversion-criticality of the v1alpha2 object.
//
// +kubebuilder:validation:XValidation:rule="!has(self.model) || !has(self.model.lora)",message="speculator.model.lora is not supported; LoRA adapters apply only to the base model"
// +kubebuilder:validation:XValidation:rule="!has(self.config) || (size(self.config) == 0) || ('method' in self.config)",message="speculator.config.method is required; it specifies the speculative decoding strategy (e.g. eagle3, draft_model, ngram, mtp)"
type SpeculatorSpec struct {
	// Model is the speculator or draft model.
	// +optional
	Model *LLMModelSpec `json:"model,omitempty"`

	// Config is vLLM's --speculative-config, key by key.
	// +optional
	Config map[string]string `json:"config,omitempty"`
}

// Criticality is how important serving the model is compared with others.
// +kubebuilder:validation:Enum=Critical;Standard;Sheddable
type Criticality string

// The criticality levels.
const (
	Critical  Criticality = "Critical"
	Standard  Criticality = "Standard"
	Sheddable Criticality = "Sheddable"
)

// LLMModelSpec is v1alpha2.LLMModelSpec plus criticality.
type LLMModelSpec struct {
	// URI is where the model is stored: hf://, s3://, pvc:// or oci://.
	// +optional
	URI string `json:"uri,omitempty"`

	// Name is the model name clients send in requests.
	// +optional
	Name *string `json:"name,omitempty"`

	// Criticality is kept in the annotation serving.kserve.io/criticality
	// of the v1alpha2 object.
	// +optional
	Criticality *Criticality `json:"criticality,omitempty"`

	// LoRA lists adapters served on top of the base model.
	// +optional
	LoRA *LoRASpec `json:"lora,omitempty"`

	// Confidential is KServe's confidential serving; accepted, not acted on.
	// +optional
	Confidential *v1alpha2.ConfidentialSpec `json:"confidential,omitempty"`
}

// LoRASpec is v1alpha2.LoRASpec with v1alpha1 adapters.
type LoRASpec struct {
	// Adapters are loaded beside the base model.
	// +optional
	Adapters []LoRAAdapter `json:"adapters,omitempty"`

	v1alpha2.LoRALimits `json:",inline"`
}

// LoRAAdapter is v1alpha2.LoRAAdapter plus criticality: KServe's v1alpha1
// types an adapter as its v1alpha1 model spec. The criticality is kept in
// the annotation serving.kserve.io/conversion-criticality of the v1alpha2
// object.
type LoRAAdapter struct {
	// URI is where the adapter is stored: hf://, s3:// or pvc://.
	// +optional
	URI string `json:"uri,omitempty"`
	// Name is the name clients use for the adapter.
	// +optional
	Name *string `json:"name,omitempty"`
	// Criticality is accepted and kept, as the model's is.
	// +optional
	Criticality *Criticality `json:"criticality,omitempty"`
	// LoRA is accepted and kept, not acted on; the CRD keeps it without a
	// schema (the type is recursive).
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	LoRA *LoRASpec `json:"lora,omitempty"`
	// Confidential is accepted and kept, not acted on.
	// +optional
	Confidential *v1alpha2.ConfidentialSpec `json:"confidential,omitempty"`
}

// RouterSpec is v1alpha2.RouterSpec with the v1alpha1 scheduler.
type RouterSpec struct {
	// Route is the HTTPRoute.
	// +optional
	Route *v1alpha2.GatewayRoutesSpec `json:"route,omitempty"`
	// Gateway names the Gateways the route attaches to.
	// +optional
	Gateway *v1alpha2.GatewaySpec `json:"gateway,omitempty"`
	// Ingress is accepted for compatibility and not acted on.
	// +optional
	Ingress *v1alpha2.IngressSpec `json:"ingress,omitempty"`
	// Scheduler is the inference scheduler and its pool.
	// +optional
	Scheduler *SchedulerSpec `json:"scheduler,omitempty"`
}

// SchedulerSpec is v1alpha2.SchedulerSpec with the GIE v1alpha2 pool shape.
type SchedulerSpec struct {
	// Pool is the InferencePool.
	// +optional
	Pool *InferencePoolSpec `json:"pool,omitempty"`

	// Template is the endpoint picker's pod.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template *corev1.PodSpec `json:"template,omitempty"`

	v1alpha2.SchedulerExtensions `json:",inline"`
}

// InferencePoolSpec is a managed pool spec or a reference.
type InferencePoolSpec struct {
	// Spec is a partial GIE v1alpha2 InferencePool spec.
	// +optional
	Spec *GIEInferencePoolSpec `json:"spec,omitempty"`
	// Ref names an existing InferencePool.
	// +optional
	Ref *corev1.LocalObjectReference `json:"ref,omitempty"`
}

// GIEInferencePoolSpec has the shape of the GIE v1alpha2 InferencePool spec
// (inference.networking.x-k8s.io/v1alpha2), every field optional.
type GIEInferencePoolSpec struct {
	// Selector selects the model-server pods.
	// +optional
	Selector map[string]string `json:"selector,omitempty"`
	// TargetPortNumber is the model-server port.
	// +optional
	TargetPortNumber *int32 `json:"targetPortNumber,omitempty"`
	// ExtensionRef is the endpoint picker.
	// +optional
	ExtensionRef *Extension `json:"extensionRef,omitempty"`
}

// Extension references the endpoint picker of a v1alpha2 pool.
type Extension struct {
	// Group of the referent.
	// +optional
	Group *string `json:"group,omitempty"`
	// Kind of the referent.
	// +optional
	Kind *string `json:"kind,omitempty"`
	// Name of the referent.
	// +optional
	Name string `json:"name,omitempty"`
	// PortNumber of the referent.
	// +optional
	PortNumber *int32 `json:"portNumber,omitempty"`
	// FailureMode is FailOpen or FailClose.
	// +optional
	FailureMode *string `json:"failureMode,omitempty"`
}
