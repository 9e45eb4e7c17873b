package webhook

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/opendatahub-io/odh-serving/api/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/api/validation"
)

// ValidatePath is where the validating webhook is served.
const ValidatePath = "/validate"

// Validator admits services and presets of either served version.
type Validator struct{}

var _ admission.Handler = Validator{}

// Handle decides one admission request.
func (Validator) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	var errs field.ErrorList
	switch req.Kind.Kind {
	case "LLMInferenceService":
		errs = validateService(req)
	case "LLMInferenceServiceConfig":
		errs = validateConfig(req)
	default:
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("unexpected kind %s", req.Kind))
	}
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	status := apierrors.NewInvalid(gk, req.Name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

func validateService(req admission.Request) field.ErrorList {
	svc, errs := decodeService(req.Kind.Version, req.Object.Raw)
	if len(errs) > 0 {
		return errs
	}
	if req.Operation == admissionv1.Create {
		return validation.ValidateService(svc)
	}
	old, errs := decodeService(req.Kind.Version, req.OldObject.Raw)
	if len(errs) > 0 {
		// The stored object predates a rule; judge the new one alone.
		return validation.ValidateService(svc)
	}
	if unchangedOrDeleting(&svc.ObjectMeta, old.Spec, svc.Spec) {
		return nil
	}
	return validation.ValidateServiceUpdate(old, svc)
}

func validateConfig(req admission.Request) field.ErrorList {
	cfg, errs := decodeConfig(req.Kind.Version, req.Object.Raw)
	if len(errs) > 0 {
		return errs
	}
	if req.Operation == admissionv1.Update {
		if old, oldErrs := decodeConfig(req.Kind.Version, req.OldObject.Raw); len(oldErrs) == 0 &&
			unchangedOrDeleting(&cfg.ObjectMeta, old.Spec, cfg.Spec) {
			return nil
		}
	}
	return validation.ValidateConfig(cfg)
}

// unchangedOrDeleting lets metadata-only updates (finalizers, labels) and
// updates of an object being deleted through, so an object stored before a
// rule existed can still be cleaned up.
func unchangedOrDeleting(newMeta *metav1.ObjectMeta, oldSpec, newSpec any) bool {
	return newMeta.DeletionTimestamp != nil || apiequality.Semantic.DeepEqual(oldSpec, newSpec)
}

func decodeService(version string, raw []byte) (*v1alpha2.LLMInferenceService, field.ErrorList) {
	switch version {
	case v1alpha2.GroupVersion.Version:
		svc := &v1alpha2.LLMInferenceService{}
		if errs := validation.DecodeStrict(raw, svc); len(errs) > 0 {
			return nil, errs
		}
		return svc, validateHubAnnotations(&svc.ObjectMeta)
	case v1alpha1.GroupVersion.Version:
		in := &v1alpha1.LLMInferenceService{}
		if errs := validation.DecodeStrict(raw, in); len(errs) > 0 {
			return nil, errs
		}
		if errs := validateSpokeAnnotations(&in.ObjectMeta); len(errs) > 0 {
			return nil, errs
		}
		svc := &v1alpha2.LLMInferenceService{}
		if err := in.ConvertTo(svc); err != nil {
			return nil, field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations"), nil, err.Error())}
		}
		return svc, nil
	default:
		return nil, field.ErrorList{field.NotSupported(field.NewPath("apiVersion"), version, []string{"v1alpha1", "v1alpha2"})}
	}
}

func decodeConfig(version string, raw []byte) (*v1alpha2.LLMInferenceServiceConfig, field.ErrorList) {
	switch version {
	case v1alpha2.GroupVersion.Version:
		cfg := &v1alpha2.LLMInferenceServiceConfig{}
		if errs := validation.DecodeStrict(raw, cfg); len(errs) > 0 {
			return nil, errs
		}
		return cfg, validateHubAnnotations(&cfg.ObjectMeta)
	case v1alpha1.GroupVersion.Version:
		in := &v1alpha1.LLMInferenceServiceConfig{}
		if errs := validation.DecodeStrict(raw, in); len(errs) > 0 {
			return nil, errs
		}
		if errs := validateSpokeAnnotations(&in.ObjectMeta); len(errs) > 0 {
			return nil, errs
		}
		cfg := &v1alpha2.LLMInferenceServiceConfig{}
		if err := in.ConvertTo(cfg); err != nil {
			return nil, field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations"), nil, err.Error())}
		}
		return cfg, nil
	default:
		return nil, field.ErrorList{field.NotSupported(field.NewPath("apiVersion"), version, []string{"v1alpha1", "v1alpha2"})}
	}
}

// validateSpokeAnnotations keeps the criticality annotation for the stored
// form: in v1alpha1 the field is the one place criticality lives.
func validateSpokeAnnotations(meta *metav1.ObjectMeta) field.ErrorList {
	if _, ok := meta.Annotations[v1alpha1.AnnotationCriticality]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(v1alpha1.AnnotationCriticality),
			"in v1alpha1 set spec.model.criticality instead; the annotation is how v1alpha2 stores it")}
	}
	return nil
}

// validateHubAnnotations rejects the conversion stash on a v1alpha2 object,
// where it has no meaning and would be lost.
func validateHubAnnotations(meta *metav1.ObjectMeta) field.ErrorList {
	if _, ok := meta.Annotations[v1alpha1.AnnotationConversionPoolSpec]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(v1alpha1.AnnotationConversionPoolSpec),
			"this annotation is written by the v1alpha1 conversion and is not valid on v1alpha2 objects")}
	}
	return nil
}
