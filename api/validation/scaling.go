package validation

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// The rules on spec.scaling and spec.prefill.scaling. The CRDs hold the same
// rules as CEL with the same messages, so the API server, the webhook and
// render refuse a bad scaling spec with the same words. Every object is a
// whole scaling spec to the CRD (maxReplicas is required in a preset too),
// so these rules hold for each object alone, and again for the merged spec,
// where a preset's replicas can meet a service's scaling.

// DefaultMinReplicas and DefaultVariantCost are the CRD's defaults; render
// applies them itself, since no API server defaults what it reads.
const (
	DefaultMinReplicas int32 = 1
	DefaultVariantCost       = "10.0"
)

// The messages shared with the CRDs' CEL rules.
const (
	msgReplicasAndScaling = "replicas and scaling are mutually exclusive; use scaling for autoscaled deployments or replicas for static deployments"
	msgWVAAndKEDA         = "wva and keda are mutually exclusive; choose one scaling mechanism"
	msgNoMechanism        = "either wva or keda must be specified when scaling is configured"
	msgMinAboveMax        = "minReplicas cannot exceed maxReplicas"
	msgIdleNotBelowMin    = "idleReplicaCount must be less than minReplicas"
	msgHPAAndKEDA         = "hpa and keda are mutually exclusive; choose one actuator backend"
	msgNoActuator         = "either hpa or keda must be specified as the actuator backend"
	msgScalingModifiers   = "scalingModifiers must not be set; WVA controls the scaling metric formula and logic"
	msgHPAName            = "horizontalPodAutoscalerConfig.name must not be set; the controller manages the HPA name"
	msgSameMode           = "decode and prefill must use the same scaling mode (wva or keda)"
	msgSameBackend        = "decode and prefill must use the same actuator backend (hpa or keda)"
)

var variantCostPattern = regexp.MustCompile(`^\d+(\.\d+)?$`)

// validateScaling checks one workload's scaling.
func validateScaling(w *v1alpha2.WorkloadSpec, path *field.Path) field.ErrorList {
	s := w.Scaling
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	sp := path.Child("scaling")
	if w.Replicas != nil {
		errs = append(errs, field.Invalid(path, *w.Replicas, msgReplicasAndScaling))
	}
	if s.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(sp.Child("maxReplicas"), s.MaxReplicas, "should be greater than or equal to 1 (maxReplicas is required)"))
	}
	if s.MinReplicas != nil && *s.MinReplicas < 1 {
		errs = append(errs, field.Invalid(sp.Child("minReplicas"), *s.MinReplicas, "should be greater than or equal to 1"))
	}
	minReplicas := DefaultMinReplicas
	if s.MinReplicas != nil {
		minReplicas = *s.MinReplicas
	}
	if minReplicas > s.MaxReplicas && s.MaxReplicas >= 1 {
		errs = append(errs, field.Invalid(sp, fmt.Sprintf("minReplicas %d, maxReplicas %d", minReplicas, s.MaxReplicas), msgMinAboveMax))
	}
	switch {
	case s.WVA != nil && s.KEDA != nil:
		return append(errs, field.Invalid(sp, "wva and keda", msgWVAAndKEDA))
	case s.WVA == nil && s.KEDA == nil:
		return append(errs, field.Required(sp, msgNoMechanism))
	case s.KEDA != nil:
		kp := sp.Child("keda")
		if len(s.KEDA.Triggers) == 0 {
			errs = append(errs, field.Required(kp.Child("triggers"), "at least one trigger is required when using direct KEDA scaling"))
		}
		for i, t := range s.KEDA.Triggers {
			tp := kp.Child("triggers").Index(i)
			if t.Type == "" {
				errs = append(errs, field.Required(tp.Child("type"), "the KEDA scaler type, e.g. prometheus"))
			}
			if t.AuthenticationRef != nil && t.AuthenticationRef.Name == "" {
				errs = append(errs, field.Required(tp.Child("authenticationRef", "name"), ""))
			}
			if t.AuthenticationRef != nil && t.AuthenticationRef.Kind == "ClusterTriggerAuthentication" {
				errs = append(errs, field.Forbidden(tp.Child("authenticationRef", "kind"), MsgClusterTriggerAuth))
			}
		}
		errs = append(errs, validateKEDA(&s.KEDA.KEDAScalingSpec, kp, minReplicas)...)
		return errs
	}
	wp := sp.Child("wva")
	if s.WVA.VariantCost != "" && !variantCostPattern.MatchString(s.WVA.VariantCost) {
		errs = append(errs, field.Invalid(wp.Child("variantCost"), s.WVA.VariantCost, `variantCost must be a non-negative decimal string (e.g. "10", "10.0", "0.5")`))
	}
	switch {
	case s.WVA.HPA != nil && s.WVA.KEDA != nil:
		errs = append(errs, field.Invalid(wp, "hpa and keda", msgHPAAndKEDA))
	case s.WVA.HPA == nil && s.WVA.KEDA == nil:
		errs = append(errs, field.Required(wp, msgNoActuator))
	case s.WVA.KEDA != nil:
		kp := wp.Child("keda")
		if a := s.WVA.KEDA.Advanced; a != nil && a.ScalingModifiers != nil && *a.ScalingModifiers != (v1alpha2.KEDAScalingModifiers{}) {
			errs = append(errs, field.Forbidden(kp.Child("advanced", "scalingModifiers"), msgScalingModifiers))
		}
		errs = append(errs, validateKEDA(s.WVA.KEDA, kp, minReplicas)...)
	}
	return errs
}

// validateKEDA checks the ScaledObject fields both KEDA paths share.
func validateKEDA(k *v1alpha2.KEDAScalingSpec, path *field.Path, minReplicas int32) field.ErrorList {
	var errs field.ErrorList
	atLeast := func(v *int32, least int32, name string) {
		if v != nil && *v < least {
			errs = append(errs, field.Invalid(path.Child(name), *v, fmt.Sprintf("should be greater than or equal to %d", least)))
		}
	}
	atLeast(k.PollingInterval, 1, "pollingInterval")
	atLeast(k.CooldownPeriod, 0, "cooldownPeriod")
	atLeast(k.InitialCooldownPeriod, 0, "initialCooldownPeriod")
	atLeast(k.IdleReplicaCount, 0, "idleReplicaCount")
	if k.IdleReplicaCount != nil && *k.IdleReplicaCount >= minReplicas {
		errs = append(errs, field.Invalid(path.Child("idleReplicaCount"), *k.IdleReplicaCount,
			fmt.Sprintf("%s (%d); it is the count while no trigger is active", msgIdleNotBelowMin, minReplicas)))
	}
	if f := k.Fallback; f != nil {
		fp := path.Child("fallback")
		if f.FailureThreshold < 0 {
			errs = append(errs, field.Invalid(fp.Child("failureThreshold"), f.FailureThreshold, "should be greater than or equal to 0"))
		}
		if f.Replicas < 0 {
			errs = append(errs, field.Invalid(fp.Child("replicas"), f.Replicas, "should be greater than or equal to 0"))
		}
	}
	if a := k.Advanced; a != nil && a.HorizontalPodAutoscalerConfig != nil && a.HorizontalPodAutoscalerConfig.Name != "" {
		errs = append(errs, field.Forbidden(path.Child("advanced", "horizontalPodAutoscalerConfig", "name"), msgHPAName))
	}
	return errs
}

// validateScalingPair checks that decode and prefill, when both are
// scaled, scale the same way: one metric pipeline, one kind of actuator.
func validateScalingPair(spec *v1alpha2.LLMInferenceServiceSpec, path *field.Path) field.ErrorList {
	if spec.Prefill == nil || spec.Scaling == nil || spec.Prefill.Scaling == nil {
		return nil
	}
	d, p := spec.Scaling, spec.Prefill.Scaling
	pp := path.Child("prefill", "scaling")
	if (d.KEDA != nil) != (p.KEDA != nil) {
		return field.ErrorList{field.Invalid(pp, mode(p), fmt.Sprintf("%s; decode uses %s", msgSameMode, mode(d)))}
	}
	if d.WVA != nil && p.WVA != nil && (d.WVA.HPA != nil) != (p.WVA.HPA != nil) {
		return field.ErrorList{field.Invalid(pp.Child("wva"), backend(p.WVA), fmt.Sprintf("%s; decode uses %s", msgSameBackend, backend(d.WVA)))}
	}
	return nil
}

func mode(s *v1alpha2.ScalingSpec) string {
	if s.KEDA != nil {
		return "keda"
	}
	return "wva"
}

func backend(w *v1alpha2.WVASpec) string {
	if w.HPA != nil {
		return "hpa"
	}
	return "keda"
}
