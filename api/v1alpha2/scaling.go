package v1alpha2

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// ScalingSpec autoscales one workload (the main one at spec.scaling, the
// prefill one at spec.prefill.scaling). It has KServe's shape: the replica
// bounds and exactly one mechanism, llm-d's workload-variant autoscaler
// (wva) through an HPA or a KEDA ScaledObject, or KEDA directly on the
// user's triggers. odh-serving renders the actuator that scales the
// workload and leaves the workload's replicas to it.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.wva) && has(self.keda))",message="wva and keda are mutually exclusive; choose one scaling mechanism"
// +kubebuilder:validation:XValidation:rule="has(self.wva) || has(self.keda)",message="either wva or keda must be specified when scaling is configured"
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas cannot exceed maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.wva) || !has(self.wva.keda) || !has(self.wva.keda.idleReplicaCount) || (has(self.minReplicas) && self.wva.keda.idleReplicaCount < self.minReplicas)",message="idleReplicaCount must be less than minReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.keda) || !has(self.keda.idleReplicaCount) || (has(self.minReplicas) && self.keda.idleReplicaCount < self.minReplicas)",message="idleReplicaCount must be less than minReplicas"
type ScalingSpec struct {
	// MinReplicas is the fewest replicas while the triggers are active.
	// KEDA's idleReplicaCount, when set, is the count below it when they
	// are not. Default: 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the most replicas.
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas"`

	// WVA scales on the replica count llm-d's workload-variant autoscaler
	// publishes (wva_desired_replicas), through an HPA or a ScaledObject.
	// +optional
	WVA *WVASpec `json:"wva,omitempty"`

	// KEDA scales through a KEDA ScaledObject on the given triggers,
	// without WVA.
	// +optional
	KEDA *DirectKEDASpec `json:"keda,omitempty"`
}

// WVASpec selects llm-d's workload-variant autoscaler and the actuator that
// carries out its decision.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.hpa) && has(self.keda))",message="hpa and keda are mutually exclusive; choose one actuator backend"
// +kubebuilder:validation:XValidation:rule="has(self.hpa) || has(self.keda)",message="either hpa or keda must be specified as the actuator backend"
// +kubebuilder:validation:XValidation:rule="!has(self.keda) || !has(self.keda.advanced) || !has(self.keda.advanced.scalingModifiers) || ((!has(self.keda.advanced.scalingModifiers.formula) || size(self.keda.advanced.scalingModifiers.formula) == 0) && (!has(self.keda.advanced.scalingModifiers.target) || size(self.keda.advanced.scalingModifiers.target) == 0) && (!has(self.keda.advanced.scalingModifiers.activationTarget) || size(self.keda.advanced.scalingModifiers.activationTarget) == 0) && (!has(self.keda.advanced.scalingModifiers.metricType) || size(self.keda.advanced.scalingModifiers.metricType) == 0))",message="scalingModifiers must not be set; WVA controls the scaling metric formula and logic"
type WVASpec struct {
	// VariantCost is the cost of one replica, a non-negative decimal
	// ("10", "10.0", "0.5"), which WVA weighs between variants.
	// Default: "10.0".
	// +optional
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +kubebuilder:default="10.0"
	VariantCost string `json:"variantCost,omitempty"`

	// ActuatorSpec is the actuator: exactly one of hpa and keda.
	ActuatorSpec `json:",inline"`
}

// ActuatorSpec is the actuator WVA's decision goes through.
type ActuatorSpec struct {
	// HPA is a HorizontalPodAutoscaler that reads wva_desired_replicas from
	// the external metrics API (a Prometheus adapter must serve it).
	// +optional
	HPA *HPAScalingSpec `json:"hpa,omitempty"`

	// KEDA is a KEDA ScaledObject that queries Prometheus for
	// wva_desired_replicas itself.
	// +optional
	KEDA *KEDAScalingSpec `json:"keda,omitempty"`
}

// HPAScalingSpec configures the HorizontalPodAutoscaler.
type HPAScalingSpec struct {
	// Behavior is the HPA's scale-up and scale-down behavior
	// (autoscaling/v2). The CRD stores it without a schema, to stay small;
	// the webhook decodes it strictly.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// KEDAScalingSpec holds the fields of a KEDA ScaledObject's spec
// (keda.sh/v1alpha1) that a service may set; odh-serving sets the target,
// the replica bounds and, under wva, the trigger.
//
// +kubebuilder:validation:XValidation:rule="!has(self.advanced) || !has(self.advanced.horizontalPodAutoscalerConfig) || !has(self.advanced.horizontalPodAutoscalerConfig.name) || size(self.advanced.horizontalPodAutoscalerConfig.name) == 0",message="horizontalPodAutoscalerConfig.name must not be set; the controller manages the HPA name"
type KEDAScalingSpec struct {
	// PollingInterval is how often, in seconds, each trigger is checked.
	// +optional
	// +kubebuilder:validation:Minimum=1
	PollingInterval *int32 `json:"pollingInterval,omitempty"`

	// CooldownPeriod is how long, in seconds, after the last active
	// trigger the workload goes back to its idle count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	CooldownPeriod *int32 `json:"cooldownPeriod,omitempty"`

	// InitialCooldownPeriod is how long, in seconds, after the
	// ScaledObject is created before the cooldown can start: time for a
	// model to load.
	// +optional
	// +kubebuilder:validation:Minimum=0
	InitialCooldownPeriod *int32 `json:"initialCooldownPeriod,omitempty"`

	// IdleReplicaCount is the replica count while no trigger is active;
	// it must be below minReplicas (KEDA supports 0).
	// +optional
	// +kubebuilder:validation:Minimum=0
	IdleReplicaCount *int32 `json:"idleReplicaCount,omitempty"`

	// Fallback is the replica count to hold while the triggers fail.
	// +optional
	Fallback *KEDAFallback `json:"fallback,omitempty"`

	// Advanced holds KEDA's advanced options.
	// +optional
	Advanced *KEDAAdvancedConfig `json:"advanced,omitempty"`
}

// DirectKEDASpec is KEDA on the user's own triggers.
type DirectKEDASpec struct {
	KEDAScalingSpec `json:",inline"`

	// Triggers are the KEDA scalers the workload scales on; at least one.
	// docs/autoscaling.md has a ready-made set on the endpoint picker's
	// queue and running requests.
	// +kubebuilder:validation:MinItems=1
	Triggers []KEDATrigger `json:"triggers"`
}

// KEDAFallback is KEDA's fallback.
type KEDAFallback struct {
	// FailureThreshold is how many failed checks in a row start the
	// fallback.
	// +kubebuilder:validation:Minimum=0
	FailureThreshold int32 `json:"failureThreshold"`
	// Replicas is the count held during the fallback.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
	// Behavior is how the fallback count is applied.
	// +optional
	// +kubebuilder:validation:Enum=static;currentReplicas;currentReplicasIfHigher;currentReplicasIfLower;scalingModifiers
	Behavior string `json:"behavior,omitempty"`
}

// KEDAAdvancedConfig is KEDA's advanced configuration.
type KEDAAdvancedConfig struct {
	// HorizontalPodAutoscalerConfig configures the HPA KEDA makes; its
	// name is the controller's to choose.
	// +optional
	HorizontalPodAutoscalerConfig *KEDAHorizontalPodAutoscalerConfig `json:"horizontalPodAutoscalerConfig,omitempty"`
	// RestoreToOriginalReplicaCount gives the workload its replica count
	// back when the ScaledObject is deleted.
	// +optional
	RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
	// ScalingModifiers combine the triggers with a formula (direct keda
	// only: under wva, WVA owns the metric).
	// +optional
	ScalingModifiers *KEDAScalingModifiers `json:"scalingModifiers,omitempty"`
}

// KEDAHorizontalPodAutoscalerConfig configures the HPA KEDA makes.
type KEDAHorizontalPodAutoscalerConfig struct {
	// Behavior is the HPA's behavior (autoscaling/v2), stored without a
	// schema like hpa.behavior.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
	// Name of the HPA. Not allowed: the controller manages it.
	// +optional
	Name string `json:"name,omitempty"`
}

// KEDAScalingModifiers is KEDA's scaling-modifiers formula.
type KEDAScalingModifiers struct {
	// Formula combines the triggers' metrics by name.
	// +optional
	Formula string `json:"formula,omitempty"`
	// Target is the formula's target value.
	// +optional
	Target string `json:"target,omitempty"`
	// ActivationTarget is the value that activates scaling.
	// +optional
	ActivationTarget string `json:"activationTarget,omitempty"`
	// MetricType is AverageValue or Value.
	// +optional
	// +kubebuilder:validation:Enum=AverageValue;Value
	MetricType string `json:"metricType,omitempty"`
}

// KEDATrigger is one KEDA scaler (a ScaledObject's triggers entry).
type KEDATrigger struct {
	// Type is the scaler: prometheus, cpu, cron, ...
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
	// Name names the trigger, for scalingModifiers formulas.
	// +optional
	Name string `json:"name,omitempty"`
	// UseCachedMetrics serves the metric from KEDA's cache.
	// +optional
	UseCachedMetrics bool `json:"useCachedMetrics,omitempty"`
	// Metadata is the scaler's configuration.
	Metadata map[string]string `json:"metadata"`
	// AuthenticationRef names a TriggerAuthentication or
	// ClusterTriggerAuthentication.
	// +optional
	AuthenticationRef *KEDAAuthenticationRef `json:"authenticationRef,omitempty"`
	// MetricType is AverageValue, Value or Utilization.
	// +optional
	MetricType autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
}

// KEDAAuthenticationRef names a TriggerAuthentication or
// ClusterTriggerAuthentication.
type KEDAAuthenticationRef struct {
	// Name of the authentication object.
	Name string `json:"name"`
	// Kind is TriggerAuthentication (default) or
	// ClusterTriggerAuthentication.
	// +optional
	// +kubebuilder:validation:Enum=TriggerAuthentication;ClusterTriggerAuthentication
	Kind string `json:"kind,omitempty"`
}

// Scaled reports whether the workload is autoscaled: its replicas belong to
// the actuator.
func (w *WorkloadSpec) Scaled() bool { return w != nil && w.Scaling != nil }
