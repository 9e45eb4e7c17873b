package crds

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// Validator checks objects against CRD schemas offline, as the API server
// would: defaults first, then the OpenAPI schema, then the CEL rules.
type Validator struct {
	versions map[schema.GroupVersionKind]*versionValidator
}

type versionValidator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// NewValidator prepares validators for every served version of the CRDs.
func NewValidator(defs []*apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
	v := &Validator{versions: map[schema.GroupVersionKind]*versionValidator{}}
	for _, crd := range defs {
		for _, ver := range crd.Spec.Versions {
			if !ver.Served || ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(ver.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				return nil, fmt.Errorf("CRD %s %s: %w", crd.Name, ver.Name, err)
			}
			ss, err := structuralschema.NewStructural(&internal)
			if err != nil {
				return nil, fmt.Errorf("CRD %s %s: %w", crd.Name, ver.Name, err)
			}
			sv, _, err := apiservervalidation.NewSchemaValidator(&internal)
			if err != nil {
				return nil, fmt.Errorf("CRD %s %s: %w", crd.Name, ver.Name, err)
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: ver.Name, Kind: crd.Spec.Names.Kind}
			v.versions[gvk] = &versionValidator{structural: ss, schema: sv, cel: cel.NewValidator(ss, true, celconfig.PerCallLimit)}
		}
	}
	return v, nil
}

// loaded holds the Validators LoadValidator made, by their list of sets.
var loaded sync.Map // string → *Validator

// LoadValidator is NewValidator for the CRDs of the named sets (Load). The
// CRDs are compiled in, and compiling their schemas and CEL rules takes a
// second or more, so it makes one Validator per list of sets and returns
// that one on later calls: a Validator is read-only once made and safe for
// concurrent use.
func LoadValidator(sets ...string) (*Validator, error) {
	key := strings.Join(sets, ",")
	if v, ok := loaded.Load(key); ok {
		return v.(*Validator), nil
	}
	defs, err := Load(sets...)
	if err != nil {
		return nil, err
	}
	v, err := NewValidator(defs)
	if err != nil {
		return nil, err
	}
	shared, _ := loaded.LoadOrStore(key, v)
	return shared.(*Validator), nil
}

// Knows reports whether a CRD for the object's kind and version is loaded.
func (v *Validator) Knows(gvk schema.GroupVersionKind) bool {
	_, ok := v.versions[gvk]
	return ok
}

// Validate checks one object. Kinds it has no CRD for are reported as such.
func (v *Validator) Validate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
	gvk := obj.GroupVersionKind()
	vv, ok := v.versions[gvk]
	if !ok {
		return field.ErrorList{field.NotSupported[string](field.NewPath("apiVersion"), gvk.GroupVersion().String()+" "+gvk.Kind, nil)}
	}
	content := runtime.DeepCopyJSON(obj.Object)
	structuraldefaulting.Default(content, vv.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, content, vv.schema)
	celErrs, _ := vv.cel.Validate(ctx, nil, vv.structural, content, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}
