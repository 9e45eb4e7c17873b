package validation

import (
	"cmp"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	openapierrors "k8s.io/kube-openapi/pkg/validation/errors"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// validators holds, per "kind/version", a function that builds that
// schema's validator once, on first use: a post-render of v1alpha2 services
// never builds the v1alpha1 ones.
var validators sync.Map

// validatorFor returns the validator of a kind's version, or nil when the
// CRD does not serve that version. The schemas are Go values generated
// from the CRDs (zz_generated.schemas.go, by hack/crdschemas): building
// one is cheaper than decoding its JSON, whose decoder alone costs a
// one-service post-render about a tenth of its CPU to set up.
func validatorFor(kind, version string) (*validate.SchemaValidator, error) {
	build, _ := validators.LoadOrStore(kind+"/"+version, sync.OnceValues(func() (*validate.SchemaValidator, error) {
		schema, ok := servedSchemas[kind+"/"+version]
		if !ok {
			return nil, nil
		}
		s := schema()
		asAPIServer(s)
		return validate.NewSchemaValidator(s, nil, "", strfmt.Default), nil
	}))
	return build.(func() (*validate.SchemaValidator, error))()
}

// ValidateSchema checks the JSON of a serving.kserve.io object of kind
// (LLMInferenceService or LLMInferenceServiceConfig) in version against
// its CRD's OpenAPI schema, as the API server does before admission: every
// minimum, maximum, enum, pattern, length, item count, type and required
// field the schema states. status is left out, as the API server ignores
// it on create; metadata is the API server's own business. Errors name
// the field path, worded as the API server words them.
func ValidateSchema(kind, version string, raw []byte) field.ErrorList {
	return validateSchema(kind, version, raw, nil)
}

// ValidateSchemaObject is ValidateSchema of an object the caller already
// decoded from its JSON as apimachinery decodes it (whole numbers int64,
// as unstructured.Unstructured holds them), which spares decoding it once
// more. obj is not changed.
func ValidateSchemaObject(kind, version string, obj map[string]any) field.ErrorList {
	return validateSchema(kind, version, nil, obj)
}

// validateSchema checks obj, or raw decoded when obj is nil.
func validateSchema(kind, version string, raw []byte, obj map[string]any) field.ErrorList {
	if kind != "LLMInferenceService" && kind != "LLMInferenceServiceConfig" {
		return field.ErrorList{field.NotSupported(field.NewPath("kind"), kind, []string{"LLMInferenceService", "LLMInferenceServiceConfig"})}
	}
	v, err := validatorFor(kind, version)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	if v == nil {
		return field.ErrorList{field.NotSupported(field.NewPath("apiVersion"), version, []string{"v1alpha1", "v1alpha2"})}
	}
	if obj == nil {
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("<root>"), "", err.Error())}
		}
	}
	if _, ok := obj["status"]; ok {
		obj = maps.Clone(obj)
		delete(obj, "status")
	}
	errs := fieldErrors(v.Validate(obj))
	// The validator walks the object's maps in no fixed order; the same
	// input must give the same message.
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Error(), b.Error()))
	})
	return errs
}

// asAPIServer gives a schema node, and every node below it, the types the
// API server gives it: x-kubernetes-int-or-string means integer or string.
func asAPIServer(s *spec.Schema) {
	if s == nil {
		return
	}
	if v, ok := s.Extensions.GetBool("x-kubernetes-int-or-string"); ok && v {
		s.Type = spec.StringOrArray{"integer", "string"}
	}
	for k := range s.Properties {
		p := s.Properties[k]
		asAPIServer(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		asAPIServer(s.Items.Schema)
		for i := range s.Items.Schemas {
			asAPIServer(&s.Items.Schemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		asAPIServer(s.AdditionalProperties.Schema)
	}
}

// fieldErrors turns the validator's result into field errors with the
// codes the API server maps them to, so both word a violation alike.
func fieldErrors(res *validate.Result) field.ErrorList {
	if res == nil || res.IsValid() {
		return nil
	}
	var errs field.ErrorList
	for _, e := range res.Errors {
		var ve *openapierrors.Validation
		if !errors.As(e, &ve) {
			errs = append(errs, field.Invalid(nil, "", e.Error()))
			continue
		}
		var path *field.Path
		if name := strings.TrimPrefix(ve.Name, "."); name != "" {
			path = parsePath(name)
		}
		value := ve.Value
		if value == nil {
			value = ""
		}
		switch ve.Code() {
		case openapierrors.RequiredFailCode:
			errs = append(errs, field.Required(path, ""))
		case openapierrors.EnumFailCode:
			allowed := make([]string, 0, len(ve.Values))
			for _, a := range ve.Values {
				if s, ok := a.(string); ok {
					allowed = append(allowed, s)
				} else {
					js, _ := json.Marshal(a)
					allowed = append(allowed, string(js))
				}
			}
			errs = append(errs, field.NotSupported(path, ve.Value, allowed))
		case openapierrors.TooLongFailCode:
			limit := int64(-1)
			if n, ok := ve.Valid.(int64); ok {
				limit = n
			}
			errs = append(errs, field.TooLong(path, "", int(limit)))
		case openapierrors.MaxItemsFailCode, openapierrors.TooManyPropertiesCode:
			actual, limit := int64(-1), int64(-1)
			if n, ok := ve.Value.(int64); ok {
				actual = n
			}
			if n, ok := ve.Valid.(int64); ok {
				limit = n
			}
			errs = append(errs, field.TooMany(path, int(actual), int(limit)))
		case openapierrors.InvalidTypeCode:
			errs = append(errs, field.TypeInvalid(path, value, ve.Error()))
		default:
			errs = append(errs, field.Invalid(path, value, ve.Error()))
		}
	}
	return errs
}
