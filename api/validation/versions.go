package validation

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"

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
		if errs := decodeWithout(raw, hub, map[string]string{v1alpha1.AnnotationConversionPoolSpec: "this annotation is written by the v1alpha1 conversion and is not valid on v1alpha2 objects"}); len(errs) > 0 {
			return errs
		}
		return checkCriticalityStash(hub)
	case v1alpha1.GroupVersion.Version:
		if errs := decodeWithout(raw, spoke, map[string]string{
			v1alpha1.AnnotationCriticality:           "in v1alpha1 set spec.model.criticality instead; the annotation is how v1alpha2 stores it",
			v1alpha1.AnnotationConversionCriticality: "in v1alpha1 set the criticality of the adapters and of spec.speculator.model instead; the annotation is how v1alpha2 stores them",
		}); len(errs) > 0 {
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

// checkCriticalityStash refuses a v1alpha2 object whose conversion
// criticality annotation the v1alpha1 conversion could not read back.
func checkCriticalityStash(obj object) field.ErrorList {
	raw, ok := obj.GetAnnotations()[v1alpha1.AnnotationConversionCriticality]
	if !ok {
		return nil
	}
	path := field.NewPath("metadata", "annotations").Key(v1alpha1.AnnotationConversionCriticality)
	var stash map[string]string
	if err := json.Unmarshal([]byte(raw), &stash); err != nil {
		return field.ErrorList{field.Invalid(path, raw, "must be a JSON object from model paths to a criticality: "+err.Error())}
	}
	for _, p := range slices.Sorted(maps.Keys(stash)) {
		switch v1alpha1.Criticality(stash[p]) {
		case v1alpha1.Critical, v1alpha1.Standard, v1alpha1.Sheddable:
		default:
			return field.ErrorList{field.NotSupported(path.Key(p), stash[p], []string{"Critical", "Standard", "Sheddable"})}
		}
	}
	return nil
}

// decodeWithout decodes raw strictly into obj and refuses the annotation
// keys, which objects of obj's version may not carry, saying why.
func decodeWithout(raw []byte, obj object, forbidden map[string]string) field.ErrorList {
	if errs := slices.DeleteFunc(DecodeStrict(raw, obj), keptUnknown); len(errs) > 0 {
		return errs
	}
	for _, key := range slices.Sorted(maps.Keys(forbidden)) {
		if _, ok := obj.GetAnnotations()[key]; ok {
			return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(key), forbidden[key])}
		}
	}
	return nil
}

// conditionField is a field of one status condition.
var conditionField = regexp.MustCompile(`^status\.conditions\[\d+\]\.[^.\[]+$`)

// keptUnknown tells the unknown fields the CRDs keep although the Go types
// lack them: those of a status condition, such as the severity of KServe's
// (knative) conditions.
func keptUnknown(e *field.Error) bool {
	return e.Type == field.ErrorTypeForbidden && e.Detail == "unknown field" && conditionField.MatchString(e.Field)
}
