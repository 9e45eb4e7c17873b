package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

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
	if req.Operation == admissionv1.Update && rawUnchangedOrDeleting(req) {
		return nil
	}
	svc, errs := validation.DecodeService(req.Kind.Version, req.Object.Raw)
	if len(errs) > 0 {
		return errs
	}
	if req.Operation == admissionv1.Create {
		return validation.ValidateService(svc)
	}
	old, errs := validation.DecodeService(req.Kind.Version, req.OldObject.Raw)
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
	if req.Operation == admissionv1.Update && rawUnchangedOrDeleting(req) {
		return nil
	}
	cfg, errs := validation.DecodeConfig(req.Kind.Version, req.Object.Raw)
	if len(errs) > 0 {
		return errs
	}
	if req.Operation == admissionv1.Update {
		if old, oldErrs := validation.DecodeConfig(req.Kind.Version, req.OldObject.Raw); len(oldErrs) == 0 &&
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

// rawUnchangedOrDeleting is unchangedOrDeleting before decoding: decoding
// checks the CRD's schema, which an object stored before a bound existed
// may break, and its finalizers must still come off.
func rawUnchangedOrDeleting(req admission.Request) bool {
	var oldObj, newObj struct {
		Metadata struct {
			DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
		} `json:"metadata"`
		Spec any `json:"spec"`
	}
	if json.Unmarshal(req.Object.Raw, &newObj) != nil || json.Unmarshal(req.OldObject.Raw, &oldObj) != nil {
		return false
	}
	return newObj.Metadata.DeletionTimestamp != nil || apiequality.Semantic.DeepEqual(oldObj.Spec, newObj.Spec)
}
