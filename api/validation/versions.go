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
	return DecodeServiceObject(version, raw, nil)
}

// DecodeServiceObject is DecodeService when the caller also holds raw
// decoded into obj (see ValidateSchemaObject); obj nil decodes raw.
func DecodeServiceObject(version string, raw []byte, obj map[string]any) (*v1alpha2.LLMInferenceService, field.ErrorList) {
	return decode("LLMInferenceService", version, raw, obj, &v1alpha2.LLMInferenceService{}, &v1alpha1.LLMInferenceService{})
}

// DecodeConfig checks and decodes a preset like DecodeService.
func DecodeConfig(version string, raw []byte) (*v1alpha2.LLMInferenceServiceConfig, field.ErrorList) {
	return DecodeConfigObject(version, raw, nil)
}

// DecodeConfigObject is DecodeConfig when the caller also holds raw decoded
// into obj (see ValidateSchemaObject); obj nil decodes raw.
func DecodeConfigObject(version string, raw []byte, obj map[string]any) (*v1alpha2.LLMInferenceServiceConfig, field.ErrorList) {
	return decode("LLMInferenceServiceConfig", version, raw, obj, &v1alpha2.LLMInferenceServiceConfig{}, &v1alpha1.LLMInferenceServiceConfig{})
}

// decode checks raw, an object of kind in version (already decoded into
// obj, or nil), against its schema and decodes it into hub (through spoke
// when raw is v1alpha1).
func decode[H hubObject, S spokeObject](kind, version string, raw []byte, obj map[string]any, hub H, spoke S) (H, field.ErrorList) {
	if errs := validateSchema(kind, version, raw, obj); len(errs) > 0 {
		return hub, errs
	}
	return hub, decodeVersioned(version, raw, hub, spoke)
}

// object is what both versions of both kinds have.
type object interface{ GetAnnotations() map[string]string }

// hubObject is the v1alpha2 form of a kind, spokeObject its v1alpha1 form.
type (
	hubObject interface {
		conversion.Hub
		object
	}
	spokeObject interface {
		conversion.Convertible
		object
	}
)

// decodeVersioned fills hub from raw, through spoke when raw is v1alpha1.
// The conversion annotations are checked where they would be lost: the
// criticality annotation is the stored form of a v1alpha1 field, and the
// pool-spec stash belongs to v1alpha1 objects only.
func decodeVersioned[H hubObject, S spokeObject](version string, raw []byte, hub H, spoke S) field.ErrorList {
	switch version {
	case v1alpha2.GroupVersion.Version:
		return decodeWithout(raw, hub, v1alpha1.AnnotationConversionPoolSpec,
			"this annotation is written by the v1alpha1 conversion and is not valid on v1alpha2 objects")
	case v1alpha1.GroupVersion.Version:
		if errs := decodeWithout(raw, spoke, v1alpha1.AnnotationCriticality,
			"in v1alpha1 set spec.model.criticality instead; the annotation is how v1alpha2 stores it"); len(errs) > 0 {
			return errs
		}
		if err := spoke.ConvertTo(hub); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations"), nil, err.Error())}
		}
		return nil
	default:
		return field.ErrorList{field.NotSupported(field.NewPath("apiVersion"), version, []string{"v1alpha1", "v1alpha2"})}
	}
}

// decodeWithout decodes raw strictly into obj and refuses the annotation
// key, which objects of obj's version may not carry, saying why.
func decodeWithout(raw []byte, obj object, key, why string) field.ErrorList {
	if errs := DecodeStrict(raw, obj); len(errs) > 0 {
		return errs
	}
	if _, ok := obj.GetAnnotations()[key]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(key), why)}
	}
	return nil
}
