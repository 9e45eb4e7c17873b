package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/opendatahub-io/odh-serving/api/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// DecodeService checks a service written in either served version (the
// version part of its apiVersion) against that version's CRD schema, as
// the API server does, then decodes it strictly, and returns its v1alpha2
// form.
func DecodeService(version string, raw []byte) (*v1alpha2.LLMInferenceService, field.ErrorList) {
	svc := &v1alpha2.LLMInferenceService{}
	if errs := ValidateSchema("LLMInferenceService", version, raw); len(errs) > 0 {
		return svc, errs
	}
	errs := decodeVersioned(version, raw, svc, &v1alpha1.LLMInferenceService{})
	return svc, errs
}

// DecodeConfig checks and decodes a preset like DecodeService.
func DecodeConfig(version string, raw []byte) (*v1alpha2.LLMInferenceServiceConfig, field.ErrorList) {
	cfg := &v1alpha2.LLMInferenceServiceConfig{}
	if errs := ValidateSchema("LLMInferenceServiceConfig", version, raw); len(errs) > 0 {
		return cfg, errs
	}
	errs := decodeVersioned(version, raw, cfg, &v1alpha1.LLMInferenceServiceConfig{})
	return cfg, errs
}

// object is what both versions of both kinds have.
type object interface{ GetAnnotations() map[string]string }

// decodeVersioned fills hub from raw, through spoke when raw is v1alpha1.
// The conversion annotations are checked where they would be lost: the
// criticality annotation is the stored form of a v1alpha1 field, and the
// pool-spec stash belongs to v1alpha1 objects only.
func decodeVersioned[H interface {
	conversion.Hub
	object
}, S interface {
	conversion.Convertible
	object
}](version string, raw []byte, hub H, spoke S) field.ErrorList {
	annotations := field.NewPath("metadata", "annotations")
	switch version {
	case v1alpha2.GroupVersion.Version:
		if errs := DecodeStrict(raw, hub); len(errs) > 0 {
			return errs
		}
		if _, ok := hub.GetAnnotations()[v1alpha1.AnnotationConversionPoolSpec]; ok {
			return field.ErrorList{field.Forbidden(annotations.Key(v1alpha1.AnnotationConversionPoolSpec),
				"this annotation is written by the v1alpha1 conversion and is not valid on v1alpha2 objects")}
		}
		return nil
	case v1alpha1.GroupVersion.Version:
		if errs := DecodeStrict(raw, spoke); len(errs) > 0 {
			return errs
		}
		if _, ok := spoke.GetAnnotations()[v1alpha1.AnnotationCriticality]; ok {
			return field.ErrorList{field.Forbidden(annotations.Key(v1alpha1.AnnotationCriticality),
				"in v1alpha1 set spec.model.criticality instead; the annotation is how v1alpha2 stores it")}
		}
		if err := spoke.ConvertTo(hub); err != nil {
			return field.ErrorList{field.Invalid(annotations, nil, err.Error())}
		}
		return nil
	default:
		return field.ErrorList{field.NotSupported(field.NewPath("apiVersion"), version, []string{"v1alpha1", "v1alpha2"})}
	}
}
