package validation

import (
	"fmt"
	"path"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// The rules on the fields KServe added beyond the model, the workloads and
// the router. The speculator's two rules are CEL in the CRDs with the same
// messages; the others the CRD cannot state (one of two fields), so the
// webhook and render hold them alone.

// The messages shared with the CRDs' CEL rules on spec.speculator.
const (
	msgSpeculatorLoRA   = "speculator.model.lora is not supported; LoRA adapters apply only to the base model"
	msgSpeculatorMethod = "speculator.config.method is required; it specifies the speculative decoding strategy (e.g. eagle3, draft_model, ngram, mtp)"
)

// validateExtensions checks spec.speculator, the KV cache tiers and the
// rollout strategy of both workloads, and the scheduler's pod metadata.
func validateExtensions(spec *v1alpha2.LLMInferenceServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s := spec.Speculator; s != nil {
		if s.Model != nil && s.Model.LoRA != nil {
			errs = append(errs, field.Invalid(p.Child("speculator"), "object", msgSpeculatorLoRA))
		}
		if _, ok := s.Config["method"]; len(s.Config) > 0 && !ok {
			errs = append(errs, field.Invalid(p.Child("speculator"), "object", msgSpeculatorMethod))
		}
	}
	errs = append(errs, validateWorkloadExtensions(&spec.WorkloadSpec, p)...)
	if spec.Prefill != nil {
		errs = append(errs, validateWorkloadExtensions(spec.Prefill, p.Child("prefill"))...)
	}
	if spec.Router != nil && spec.Router.Scheduler != nil {
		sp := p.Child("router", "scheduler")
		errs = append(errs, metav1validation.ValidateLabels(spec.Router.Scheduler.Labels, sp.Child("labels"))...)
		errs = append(errs, apivalidation.ValidateAnnotations(spec.Router.Scheduler.Annotations, sp.Child("annotations"))...)
	}
	return errs
}

func validateWorkloadExtensions(w *v1alpha2.WorkloadSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kv := w.KVCacheOffloading; kv != nil {
		kp := p.Child("kvCacheOffloading")
		if kv.CPU.Sign() <= 0 {
			errs = append(errs, field.Invalid(kp.Child("cpu"), kv.CPU.String(), "must be greater than 0 (the CPU memory of the first tier; it is required)"))
		}
		mounts := map[string]int{}
		for i, tier := range kv.Secondary {
			tp := kp.Child("secondary").Index(i)
			fs := tier.FileSystem
			if fs == nil {
				errs = append(errs, field.Required(tp.Child("fileSystem"), "a secondary tier needs fileSystem, the only kind of tier there is"))
				continue
			}
			fp := tp.Child("fileSystem")
			switch {
			case (fs.EmptyDir == nil) == (fs.PVC == nil):
				errs = append(errs, field.Invalid(fp, "object", "set exactly one of emptyDir and pvc"))
			case fs.EmptyDir != nil && fs.EmptyDir.Size.Sign() <= 0:
				errs = append(errs, field.Invalid(fp.Child("emptyDir", "size"), fs.EmptyDir.Size.String(), "must be greater than 0 (it is required)"))
			case fs.PVC != nil && (fs.PVC.Spec == nil) == (fs.PVC.Ref == nil):
				errs = append(errs, field.Invalid(fp.Child("pvc"), "object", "set exactly one of spec (a claim per pod) and ref (an existing claim)"))
			case fs.PVC != nil && fs.PVC.Ref != nil && fs.PVC.Ref.Name == "":
				errs = append(errs, field.Required(fp.Child("pvc", "ref", "name"), "the name of an existing PersistentVolumeClaim"))
			}
			mount := KVCacheMountPath(fs, i)
			if !strings.HasPrefix(mount, "/") || path.Clean(mount) != mount || mount == "/" {
				errs = append(errs, field.Invalid(fp.Child("mountPath"), fs.MountPath, "must be a clean absolute path below /"))
			} else if j, dup := mounts[mount]; dup {
				errs = append(errs, field.Invalid(fp.Child("mountPath"), mount, fmt.Sprintf("secondary[%d] is mounted there already", j)))
			}
			mounts[mount] = i
		}
	}
	if r := w.RolloutStrategy; r != nil {
		rp := p.Child("rolloutStrategy")
		errs = append(errs, validateIntOrPercent(r.MaxUnavailable, rp.Child("maxUnavailable"))...)
		errs = append(errs, validateIntOrPercent(r.MaxSurge, rp.Child("maxSurge"))...)
		if isZero(r.MaxUnavailable) && isZero(r.MaxSurge) {
			errs = append(errs, field.Invalid(rp, "object", "maxUnavailable and maxSurge may not both be 0: the update could never progress"))
		}
	}
	return errs
}

// KVCacheMountPath is where the file-system tier at index i is mounted in
// main: its mountPath, else KServe's /mnt/kv-cache-<i>.
func KVCacheMountPath(fs *v1alpha2.FileSystemTierSpec, i int) string {
	if fs.MountPath != "" {
		return fs.MountPath
	}
	return fmt.Sprintf("/mnt/kv-cache-%d", i)
}

func validateIntOrPercent(v *intstr.IntOrString, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(p, v.IntVal, "must be 0 or more")}
		}
		return nil
	}
	n, ok := strings.CutSuffix(v.StrVal, "%")
	var pct int
	if _, err := fmt.Sscanf(n, "%d", &pct); !ok || err != nil || fmt.Sprint(pct) != n || pct < 0 || pct > 100 {
		return field.ErrorList{field.Invalid(p, v.StrVal, "must be a number or a percentage between 0% and 100%")}
	}
	return nil
}

func isZero(v *intstr.IntOrString) bool {
	return v != nil && (v.Type == intstr.Int && v.IntVal == 0 || v.Type == intstr.String && v.StrVal == "0%")
}

// Unimplemented lists the fields of spec that odh-serving accepts and keeps
// but does not act on, each with a sentence for the user: the webhook
// returns them as admission warnings and render prints them, so a KServe
// service is never refused for them and never silently changed either.
func Unimplemented(spec *v1alpha2.LLMInferenceServiceSpec) []string {
	var out []string
	warn := func(path, what string) {
		out = append(out, fmt.Sprintf("spec.%s is accepted and stored but not acted on by odh-serving: %s (docs/kserve-compat.md)", path, what))
	}
	if spec.Model.Confidential != nil && spec.Model.Confidential.Enabled {
		warn("model.confidential", "the model is downloaded as it is, without decryption")
	}
	if spec.Model.LoRA != nil {
		for i, a := range spec.Model.LoRA.Adapters {
			path := fmt.Sprintf("model.lora.adapters[%d]", i)
			if a.Confidential != nil && a.Confidential.Enabled {
				warn(path+".confidential", "the adapter is downloaded as it is, without decryption")
			}
			if a.LoRA != nil {
				warn(path+".lora", "an adapter's own adapters are not served")
			}
		}
	}
	if s := spec.Speculator; s != nil && s.Model != nil && s.Model.Confidential != nil && s.Model.Confidential.Enabled {
		warn("speculator.model.confidential", "the speculator is downloaded as it is, without decryption")
	}
	if spec.Runtime != nil {
		warn("runtime", "the presets' image serves the model, not the ServingRuntime's")
	}
	if r := spec.Router; r != nil {
		if r.Route != nil && (r.Route.Group != nil || r.Route.Weight != nil) {
			warn("router.route.group", "no routing group is formed; the route sends all of the service's traffic to it")
		}
		if s := r.Scheduler; s != nil {
			if s.Config != nil && s.Config.Ref != nil && s.Config.Inline != nil {
				warn("router.scheduler.config.ref", "config.inline is set too and wins; the ConfigMap is not read")
			}
			if s.Tokenizer != nil {
				warn("router.scheduler.tokenizer", "no standalone tokenizer is deployed")
			}
		}
	}
	return out
}
