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

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/api/validation"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/presets"
)

// ValidatePath is where the validating webhook is served.
const ValidatePath = "/validate"

// Validator admits services and presets of either served version. Its zero
// value checks services' managed routes against the built-in presets and
// the default render options.
type Validator struct {
	// Presets returns the catalog a service in namespace renders with (the
	// controller's: the built-in presets under the LLMInferenceServiceConfigs
	// of the system namespace and the service's). Nil: the built-in presets.
	Presets func(ctx context.Context, namespace string) (*preset.Catalog, error)
	// Options are the render options of the controller the webhook serves,
	// so that a route is judged as the controller renders it (the gateways,
	// the allowed hostnames, the images the templates name).
	Options engine.Options
}

var _ admission.Handler = Validator{}

// Handle decides one admission request.
func (v Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	var errs field.ErrorList
	var warnings []string
	switch req.Kind.Kind {
	case "LLMInferenceService":
		errs, warnings = services.check(req, v.Options.TriggerPolicy())
		if len(errs) == 0 && changesSpec(req) {
			errs = v.checkRoute(ctx, req)
		}
	case "LLMInferenceServiceConfig":
		errs, warnings = configs.check(req, v.Options.TriggerPolicy())
	default:
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("unexpected kind %s", req.Kind))
	}
	if len(errs) == 0 {
		// Fields accepted but not acted on are admitted with a warning, so
		// a KServe service applies and its author learns what it lacks.
		return admission.Allowed("").WithWarnings(warnings...)
	}
	status := apierrors.NewInvalid(gk, req.Name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

// kind is how the webhook checks one kind: decode checks an object of a
// served version against its CRD schema and decodes it, validate checks a
// new object and validateUpdate a changed one against the stored one; warn
// names the fields of a valid object that are stored but not acted on.
type kind[T interface{ GetDeletionTimestamp() *metav1.Time }] struct {
	decode func(version string, raw []byte) (T, field.ErrorList)
	spec   func(T) any
	// triggers checks the spec's KEDA triggers against the platform's
	// policy.
	triggers       func(T, validation.TriggerPolicy) field.ErrorList
	validate       func(T) field.ErrorList
	validateUpdate func(old, obj T) field.ErrorList
	warn           func(T) []string
}

var (
	services = kind[*v1alpha2.LLMInferenceService]{
		decode: validation.DecodeService,
		spec:   func(s *v1alpha2.LLMInferenceService) any { return s.Spec },
		triggers: func(s *v1alpha2.LLMInferenceService, p validation.TriggerPolicy) field.ErrorList {
			return validation.ValidateTriggers(&s.Spec, p)
		},
		validate:       validation.ValidateService,
		validateUpdate: validation.ValidateServiceUpdate,
		warn:           func(s *v1alpha2.LLMInferenceService) []string { return validation.Unimplemented(&s.Spec) },
	}
	configs = kind[*v1alpha2.LLMInferenceServiceConfig]{
		decode: validation.DecodeConfig,
		spec:   func(c *v1alpha2.LLMInferenceServiceConfig) any { return c.Spec },
		triggers: func(c *v1alpha2.LLMInferenceServiceConfig, p validation.TriggerPolicy) field.ErrorList {
			return validation.ValidateTriggers(&c.Spec, p)
		},
		validate: validation.ValidateConfig,
		// A preset has no rule about what an update may change.
		validateUpdate: func(_, cfg *v1alpha2.LLMInferenceServiceConfig) field.ErrorList {
			return validation.ValidateConfig(cfg)
		},
		warn: func(c *v1alpha2.LLMInferenceServiceConfig) []string { return validation.Unimplemented(&c.Spec) },
	}
)

// check decides a create or an update. Metadata-only updates (finalizers,
// labels) and updates of an object being deleted go through unchecked, so
// an object stored before a rule existed can still be cleaned up.
func (k kind[T]) check(req admission.Request, policy validation.TriggerPolicy) (field.ErrorList, []string) {
	if req.Operation == admissionv1.Update && rawUnchangedOrDeleting(req) {
		return nil, nil
	}
	obj, errs := k.decode(req.Kind.Version, req.Object.Raw)
	if len(errs) > 0 {
		return errs, nil
	}
	if req.Operation == admissionv1.Create {
		return append(k.validate(obj), k.triggers(obj, policy)...), k.warn(obj)
	}
	old, errs := k.decode(req.Kind.Version, req.OldObject.Raw)
	if len(errs) > 0 {
		// The stored object predates a rule; judge the new one alone.
		return append(k.validate(obj), k.triggers(obj, policy)...), k.warn(obj)
	}
	if obj.GetDeletionTimestamp() != nil || apiequality.Semantic.DeepEqual(k.spec(old), k.spec(obj)) {
		return nil, nil
	}
	return append(k.validateUpdate(old, obj), k.triggers(obj, policy)...), k.warn(obj)
}

// rawUnchangedOrDeleting is check's shortcut before decoding: decoding
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

// changesSpec reports whether the request is one check judges: a create,
// or an update that changes the spec of an object not being deleted.
func changesSpec(req admission.Request) bool {
	return req.Operation == admissionv1.Create || !rawUnchangedOrDeleting(req)
}

// checkRoute refuses a service whose managed route, merged from its presets
// and evaluated, would match requests meant for another service
// (engine.RouteErrors, build.CheckRouteOwner): the errors render and the
// controller give, word for word. A service whose presets do not resolve
// yet is admitted, and its route is checked when the controller renders
// it.
func (v Validator) checkRoute(ctx context.Context, req admission.Request) field.ErrorList {
	svc, errs := validation.DecodeService(req.Kind.Version, req.Object.Raw)
	if len(errs) > 0 {
		return errs
	}
	if svc.Namespace == "" {
		svc.Namespace = req.Namespace
	}
	catalog, opts, err := v.renderInputs(ctx, svc.Namespace)
	if err != nil {
		// Refused, not admitted unchecked: the API server retries, and a
		// route that would take another tenant's traffic never slips through.
		return field.ErrorList{field.InternalError(field.NewPath("spec", "router", "route"), err)}
	}
	return engine.RouteErrors(ctx, svc, catalog, opts)
}

// renderInputs are the catalog and options a service in namespace renders
// with.
func (v Validator) renderInputs(ctx context.Context, namespace string) (*preset.Catalog, engine.Options, error) {
	opts := v.Options.Defaults()
	if opts.Images == nil {
		images, err := presets.Images()
		if err != nil {
			return nil, opts, err
		}
		opts.Images = images
	}
	if v.Presets != nil {
		c, err := v.Presets(ctx, namespace)
		if err != nil {
			return nil, opts, fmt.Errorf("read the presets of namespace %s: %w", namespace, err)
		}
		return c, opts, nil
	}
	builtin, err := presets.Load(opts.SystemNamespace, *opts.PresetPrefix)
	if err != nil {
		return nil, opts, err
	}
	c, err := preset.Overlay(opts.SystemNamespace, builtin, nil)
	return c, opts, err
}
