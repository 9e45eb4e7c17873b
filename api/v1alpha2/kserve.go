package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// KServeExtensions are the spec fields KServe's LLMInferenceService has
// beyond the model, the workloads and the router. Both API versions carry
// them unchanged but for the speculator's model, which is each version's
// model spec.
type KServeExtensions struct {
	RuntimeExtensions `json:",inline"`

	// Speculator configures speculative decoding: a draft or speculator
	// model and vLLM's --speculative-config.
	// +optional
	Speculator *SpeculatorSpec `json:"speculator,omitempty"`
}

// RuntimeExtensions are the KServe spec fields that are the same in both API
// versions.
type RuntimeExtensions struct {
	// StorageInitializer controls the init container that downloads hf://
	// and s3:// models.
	// +optional
	StorageInitializer *StorageInitializerSpec `json:"storageInitializer,omitempty"`

	// Tracing, when present (also as {}), turns on OpenTelemetry tracing in
	// the model servers and the endpoint picker.
	// +optional
	Tracing *TracingSpec `json:"tracing,omitempty"`

	// Runtime names a KServe ServingRuntime or ClusterServingRuntime that
	// supplies the container image. Accepted and kept, not acted on:
	// render and the webhook warn.
	// +optional
	Runtime *string `json:"runtime,omitempty"`

	// TrustRemoteCode lets the runtime run code bundled with the model:
	// vLLM gets --trust-remote-code.
	// +optional
	TrustRemoteCode bool `json:"trustRemoteCode,omitempty"`
}

// StorageInitializerSpec controls the storage-initializer init container.
type StorageInitializerSpec struct {
	// Enabled false leaves the storage-initializer out: the model must reach
	// /mnt/models some other way (an init container or volume of your own).
	// Unset or true: hf:// and s3:// models are downloaded.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// TracingSpec is the OpenTelemetry configuration of every managed
// component; unset fields take KServe's defaults.
type TracingSpec struct {
	// ExporterEndpoint is OTEL_EXPORTER_OTLP_ENDPOINT. Default:
	// http://otel-collector:4317.
	// +optional
	ExporterEndpoint *string `json:"exporterEndpoint,omitempty"`
	// Sampler is OTEL_TRACES_SAMPLER. Default: parentbased_traceidratio.
	// +optional
	Sampler *string `json:"sampler,omitempty"`
	// SamplerArg is OTEL_TRACES_SAMPLER_ARG. Default: 0.05.
	// +optional
	SamplerArg *string `json:"samplerArg,omitempty"`
	// Exporter is OTEL_TRACES_EXPORTER. Default: otlp.
	// +optional
	Exporter *string `json:"exporter,omitempty"`
}

// SpeculatorSpec configures speculative decoding in the decode (or single)
// workload.
//
// +kubebuilder:validation:XValidation:rule="!has(self.model) || !has(self.model.lora)",message="speculator.model.lora is not supported; LoRA adapters apply only to the base model"
// +kubebuilder:validation:XValidation:rule="!has(self.config) || (size(self.config) == 0) || ('method' in self.config)",message="speculator.config.method is required; it specifies the speculative decoding strategy (e.g. eagle3, draft_model, ngram, mtp)"
type SpeculatorSpec struct {
	// Model is the speculator or draft model, mounted at
	// /mnt/speculator/model. Methods without a model (ngram, mtp) leave it
	// out.
	// +optional
	Model *LLMModelSpec `json:"model,omitempty"`

	// Config is vLLM's --speculative-config, key by key; values that read
	// as numbers or booleans are passed as such.
	// +optional
	Config map[string]string `json:"config,omitempty"`
}

// KVCacheOffloadingSpec configures vLLM's OffloadingConnector.
type KVCacheOffloadingSpec struct {
	// CPU is the CPU memory of the first tier (cpu_bytes_to_use).
	CPU resource.Quantity `json:"cpu"`

	// EvictionPolicy of the CPU tier. Default: lru.
	// +optional
	// +kubebuilder:validation:Enum=lru;arc
	// +kubebuilder:default=lru
	EvictionPolicy string `json:"evictionPolicy,omitempty"`

	// Secondary are further tiers, in the order vLLM cascades through them.
	// +optional
	Secondary []SecondaryTierSpec `json:"secondary,omitempty"`
}

// SecondaryTierSpec is one secondary KV cache tier.
type SecondaryTierSpec struct {
	// FileSystem is a tier on a mounted volume.
	// +optional
	FileSystem *FileSystemTierSpec `json:"fileSystem,omitempty"`
}

// FileSystemTierSpec is a file-system tier: exactly one of emptyDir and pvc.
type FileSystemTierSpec struct {
	// MountPath is where the tier is mounted in main. Default:
	// /mnt/kv-cache-<index>.
	// +optional
	MountPath string `json:"mountPath,omitempty"`

	// EmptyDir is a node-local emptyDir of this size; main also requests
	// the size as ephemeral-storage.
	// +optional
	EmptyDir *EmptyDirTierSpec `json:"emptyDir,omitempty"`

	// PVC is a claim per pod (spec) or an existing claim (ref).
	// +optional
	PVC *PVCTierSpec `json:"pvc,omitempty"`
}

// EmptyDirTierSpec sizes an emptyDir tier.
type EmptyDirTierSpec struct {
	// Size is the emptyDir's sizeLimit.
	Size resource.Quantity `json:"size"`
}

// PVCTierSpec is exactly one of spec and ref.
type PVCTierSpec struct {
	// Spec makes an ephemeral claim per pod. Decoded strictly by the
	// webhook and render; the CRD keeps it without a schema, which would
	// be four more copies of the claim's.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Spec *corev1.PersistentVolumeClaimSpec `json:"spec,omitempty"`

	// Ref mounts an existing claim.
	// +optional
	Ref *PVCRefTierSpec `json:"ref,omitempty"`
}

// PVCRefTierSpec names an existing claim.
type PVCRefTierSpec struct {
	// Name of the PersistentVolumeClaim.
	Name string `json:"name"`
	// Path in the claim, the mount's subPath.
	// +optional
	Path string `json:"path,omitempty"`
}

// RolloutStrategy bounds a rolling update.
type RolloutStrategy struct {
	// MaxUnavailable is how many replicas may be down during an update: a
	// number or a percentage.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// MaxSurge is how many replicas may be added during an update: a
	// number or a percentage.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// ConfidentialSpec is KServe's confidential serving of encrypted models.
type ConfidentialSpec struct {
	// Enabled turns confidential serving on.
	Enabled bool `json:"enabled"`
	// ResourceId is the key's Key Broker Service resource,
	// kbs:///<repo>/<type>/<tag>.
	// +optional
	ResourceId *string `json:"resourceId,omitempty"` //nolint:revive // KServe's JSON name
}

// SchedulerExtensions are the scheduler fields KServe has beyond the pool
// and the pod template. Both API versions carry them unchanged.
type SchedulerExtensions struct {
	// Labels are added to the endpoint picker's pod.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the endpoint picker's pod.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Config is the endpoint picker's configuration, which replaces the
	// preset's --config-text: inline, or the text of a ConfigMap key (ref)
	// in the service's namespace, or for a name starting
	// config-scheduler-, in the system namespace.
	// +optional
	Config *SchedulerConfigSpec `json:"config,omitempty"`

	// Replicas is the number of endpoint picker pods. Default: 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Tokenizer is KServe's standalone tokenizer deployment. Accepted and
	// kept, not acted on: render and the webhook warn.
	// +optional
	Tokenizer *TokenizerSpec `json:"tokenizer,omitempty"`

	// Tracing overrides the endpoint picker's OpenTelemetry settings.
	// +optional
	Tracing *SchedulerTracingSpec `json:"tracing,omitempty"`
}

// SchedulerConfigSpec is an EndpointPickerConfig, inline or referenced.
type SchedulerConfigSpec struct {
	// Inline is the EndpointPickerConfig itself.
	// +optional
	Inline *runtime.RawExtension `json:"inline,omitempty"`
	// Ref is a ConfigMap key holding it.
	// +optional
	Ref *corev1.ConfigMapKeySelector `json:"ref,omitempty"`
}

// TokenizerSpec is a tokenizer deployment's pod.
type TokenizerSpec struct {
	// Template is the tokenizer's pod, merged over KServe's defaults.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template *corev1.PodSpec `json:"template,omitempty"`
}

// SchedulerTracingSpec is the endpoint picker's OpenTelemetry settings, as
// KServe's config-llm-tracing-scheduler preset writes them.
type SchedulerTracingSpec struct {
	// ServiceName is OTEL_SERVICE_NAME. Default: inference-scheduler.
	// +optional
	ServiceName *string `json:"serviceName,omitempty"`
	// OtelExporterEndpoint is OTEL_EXPORTER_OTLP_ENDPOINT.
	// +optional
	OtelExporterEndpoint *string `json:"otelExporterEndpoint,omitempty"`
	// TracesSampler is OTEL_TRACES_SAMPLER.
	// +optional
	TracesSampler *string `json:"tracesSampler,omitempty"`
	// TracesSamplerArg is OTEL_TRACES_SAMPLER_ARG.
	// +optional
	TracesSamplerArg *string `json:"tracesSamplerArg,omitempty"`
	// TracesExporter is OTEL_TRACES_EXPORTER.
	// +optional
	TracesExporter *string `json:"tracesExporter,omitempty"`
}
