package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// ValidateService checks a service as the user wrote it, before presets are
// merged. Rules that a preset could still satisfy apply only when the
// service names no baseRefs.
func ValidateService(svc *v1alpha2.LLMInferenceService) field.ErrorList {
	complete := len(svc.Spec.BaseRefs) == 0
	return validateSpec(&svc.Spec, field.NewPath("spec"), complete)
}

// ValidateServiceUpdate checks a service update: the new service must be
// valid, and the size of each multi-node group may not change, because a
// LeaderWorkerSet cannot be resized in place.
func ValidateServiceUpdate(oldSvc, newSvc *v1alpha2.LLMInferenceService) field.ErrorList {
	errs := ValidateService(newSvc)
	spec := field.NewPath("spec")
	errs = append(errs, validateSizeUnchanged(oldSvc.Spec.Parallelism, newSvc.Spec.Parallelism, spec.Child("parallelism"))...)
	var oldPrefill, newPrefill *v1alpha2.ParallelismSpec
	if oldSvc.Spec.Prefill != nil {
		oldPrefill = oldSvc.Spec.Prefill.Parallelism
	}
	if newSvc.Spec.Prefill != nil {
		newPrefill = newSvc.Spec.Prefill.Parallelism
	}
	errs = append(errs, validateSizeUnchanged(oldPrefill, newPrefill, spec.Child("prefill", "parallelism"))...)
	return errs
}

// ValidateConfig checks a preset. Presets are partial, so only the rules
// about one object alone apply, and presets may not name baseRefs.
func ValidateConfig(cfg *v1alpha2.LLMInferenceServiceConfig) field.ErrorList {
	spec := field.NewPath("spec")
	errs := validateSpec(&cfg.Spec, spec, false)
	if len(cfg.Spec.BaseRefs) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("baseRefs"), "an LLMInferenceServiceConfig may not reference other configs"))
	}
	return errs
}

// ValidateMergedSpec checks a spec after every preset is merged into it: the
// workload rules, now all of them. The router rules are about what a user
// wrote in one object and were checked there; after the merge, gateway.refs
// replace the route preset's parentRefs and route refs win over a route spec.
func ValidateMergedSpec(spec *v1alpha2.LLMInferenceServiceSpec) field.ErrorList {
	path := field.NewPath("spec")
	errs := validateWorkload(&spec.WorkloadSpec, path, true)
	if spec.Prefill != nil {
		errs = append(errs, validateWorkload(spec.Prefill, path.Child("prefill"), true)...)
	}
	errs = append(errs, validateScalings(spec, path)...)
	errs = append(errs, validateExtensions(spec, path)...)
	return append(errs, validatePods(spec, path)...)
}

// validatePods applies validatePod to every pod spec of a spec. Every layer
// is merged by container name, so a layer with a nameless or repeated
// container fails the merge; checking each layer names the field instead.
func validatePods(spec *v1alpha2.LLMInferenceServiceSpec, path *field.Path) field.ErrorList {
	errs := validatePod(spec.Template, path.Child("template"))
	errs = append(errs, validatePod(spec.Worker, path.Child("worker"))...)
	if spec.Prefill != nil {
		errs = append(errs, validatePod(spec.Prefill.Template, path.Child("prefill", "template"))...)
		errs = append(errs, validatePod(spec.Prefill.Worker, path.Child("prefill", "worker"))...)
	}
	if spec.Router != nil && spec.Router.Scheduler != nil {
		tp := path.Child("router", "scheduler", "template")
		errs = append(errs, validatePod(spec.Router.Scheduler.Template, tp)...)
		errs = append(errs, validateSchedulerServiceAccount(spec.Router.Scheduler.Template, tp)...)
	}
	return errs
}

// MsgSchedulerServiceAccount is why the endpoint picker's template may not
// name a ServiceAccount.
const MsgSchedulerServiceAccount = "the endpoint picker always runs as the ServiceAccount the controller makes for it " +
	"(<service>-epp-sa), the only one bound to system:auth-delegator and to its Role; naming another would give that " +
	"ServiceAccount those rights. Remove the field (image pull secrets go in the template's imagePullSecrets)"

// validateSchedulerServiceAccount refuses a ServiceAccount in the endpoint
// picker's template, by either field (serviceAccount is the deprecated
// alias), so that the cluster-wide binding the controller makes for the
// endpoint picker never reaches a ServiceAccount the user picks.
func validateSchedulerServiceAccount(pod *corev1.PodSpec, path *field.Path) field.ErrorList {
	if pod == nil {
		return nil
	}
	var errs field.ErrorList
	if pod.ServiceAccountName != "" {
		errs = append(errs, field.Forbidden(path.Child("serviceAccountName"), MsgSchedulerServiceAccount))
	}
	if pod.DeprecatedServiceAccount != "" {
		errs = append(errs, field.Forbidden(path.Child("serviceAccount"), MsgSchedulerServiceAccount))
	}
	return errs
}

// validatePod checks what merging by name needs: every container and init
// container has a name, and no name appears twice; and that container ports
// are port numbers.
func validatePod(pod *corev1.PodSpec, path *field.Path) field.ErrorList {
	if pod == nil {
		return nil
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	check := func(list []corev1.Container, p *field.Path) {
		for i, c := range list {
			switch {
			case c.Name == "":
				errs = append(errs, field.Required(p.Index(i).Child("name"), "containers merge by name, so every container needs one"))
			case seen[c.Name]:
				errs = append(errs, field.Duplicate(p.Index(i).Child("name"), c.Name))
			}
			seen[c.Name] = true
			// The API server would refuse the workload only when the
			// controller applies it; a bad port is the layer's fault.
			for j, port := range c.Ports {
				if port.ContainerPort < 1 || port.ContainerPort > 65535 {
					errs = append(errs, field.Invalid(p.Index(i).Child("ports").Index(j).Child("containerPort"), port.ContainerPort,
						"must be a port number between 1 and 65535"))
				}
			}
		}
	}
	check(pod.InitContainers, path.Child("initContainers"))
	check(pod.Containers, path.Child("containers"))
	return errs
}

// validateSpec applies the rules to one spec. complete says that no preset
// will be merged into it, so rules a preset could satisfy apply too.
func validateSpec(spec *v1alpha2.LLMInferenceServiceSpec, path *field.Path, complete bool) field.ErrorList {
	errs := validateWorkload(&spec.WorkloadSpec, path, complete)
	errs = append(errs, validatePods(spec, path)...)
	if spec.Prefill != nil {
		errs = append(errs, validateWorkload(spec.Prefill, path.Child("prefill"), complete)...)
	}
	if spec.Router != nil {
		errs = append(errs, validateRouter(spec.Router, path.Child("router"))...)
	}
	errs = append(errs, validateExtensions(spec, path)...)
	return append(errs, validateScalings(spec, path)...)
}

// validateScalings checks the scaling of both workloads and that they agree.
// The CRD checks every object's scaling in full, so these rules hold for a
// preset and a service alone as much as for the merged spec.
func validateScalings(spec *v1alpha2.LLMInferenceServiceSpec, path *field.Path) field.ErrorList {
	errs := validateScaling(&spec.WorkloadSpec, path)
	if spec.Prefill != nil {
		errs = append(errs, validateScaling(spec.Prefill, path.Child("prefill"))...)
	}
	return append(errs, validateScalingPair(spec, path)...)
}

func validateWorkload(w *v1alpha2.WorkloadSpec, path *field.Path, complete bool) field.ErrorList {
	var errs field.ErrorList
	p := w.Parallelism
	pp := path.Child("parallelism")
	if p != nil {
		sizes := []struct {
			name string
			v    *int32
		}{{"tensor", p.Tensor}, {"pipeline", p.Pipeline}, {"data", p.Data}, {"dataLocal", p.DataLocal}}
		for _, s := range sizes {
			if s.v != nil && *s.v <= 0 {
				errs = append(errs, field.Invalid(pp.Child(s.name), *s.v, "must be greater than 0"))
			}
		}
		if p.DataRPCPort != nil && (*p.DataRPCPort < 1 || *p.DataRPCPort > 65535) {
			errs = append(errs, field.Invalid(pp.Child("dataRPCPort"), *p.DataRPCPort, "must be a port number between 1 and 65535"))
		}
		if p.Pipeline != nil && (p.Data != nil || p.DataLocal != nil) {
			errs = append(errs, field.Forbidden(pp.Child("pipeline"), "pipeline parallelism cannot be combined with data parallelism (data, dataLocal)"))
		}
	}
	if !complete {
		return errs
	}
	if p != nil && (p.Data == nil) != (p.DataLocal == nil) {
		missing := "dataLocal"
		if p.Data == nil {
			missing = "data"
		}
		errs = append(errs, field.Required(pp.Child(missing), "data and dataLocal must be set together"))
	}
	if w.Worker != nil && !p.IsDataParallel() && !p.IsPipelineParallel() {
		errs = append(errs, field.Required(pp, "a worker needs data parallelism (data and dataLocal) or pipeline parallelism (pipeline)"))
	}
	return errs
}

func validateRouter(r *v1alpha2.RouterSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var http *v1alpha2.HTTPRouteSpec
	if r.Route != nil {
		http = r.Route.HTTP
	}
	httpPath := path.Child("route", "http")
	if http != nil && len(http.Refs) > 0 {
		if http.Spec != nil {
			errs = append(errs, field.Forbidden(httpPath.Child("spec"), "set either route.http.refs (routes you manage) or route.http.spec (a managed route), not both"))
		}
		if r.Gateway != nil && len(r.Gateway.Refs) == 0 {
			errs = append(errs, field.Forbidden(path.Child("gateway"), "a managed gateway ({}) cannot be combined with route.http.refs; name the gateways in gateway.refs or drop gateway"))
		}
	}
	if http != nil && http.Spec != nil && len(http.Spec.ParentRefs) > 0 && r.Gateway != nil && len(r.Gateway.Refs) > 0 {
		errs = append(errs, field.Forbidden(httpPath.Child("spec", "parentRefs"), "set either route.http.spec.parentRefs or gateway.refs, not both"))
	}
	if r.Scheduler != nil && r.Scheduler.Pool != nil && r.Scheduler.Pool.Ref != nil && r.Scheduler.Pool.Spec != nil {
		errs = append(errs, field.Forbidden(path.Child("scheduler", "pool", "spec"), "set either scheduler.pool.ref (a pool you manage) or scheduler.pool.spec, not both"))
	}
	if r.Scheduler != nil && r.Scheduler.Pool != nil && r.Scheduler.Pool.Spec != nil && r.Scheduler.Pool.Spec.Selector != nil {
		// The InferencePool CRDs check label values but not keys; an
		// empty or malformed key would reach the endpoint picker.
		errs = append(errs, metav1validation.ValidateLabels(r.Scheduler.Pool.Spec.Selector.MatchLabels,
			path.Child("scheduler", "pool", "spec", "selector", "matchLabels"))...)
	}
	return errs
}

func validateSizeUnchanged(oldP, newP *v1alpha2.ParallelismSpec, path *field.Path) field.ErrorList {
	oldSize, newSize := oldP.TotalSize(), newP.TotalSize()
	if oldSize == newSize {
		return nil
	}
	return field.ErrorList{field.Invalid(path, newSize,
		fmt.Sprintf("the multi-node group size may not change (was %d); delete and recreate the service to resize it", oldSize))}
}
