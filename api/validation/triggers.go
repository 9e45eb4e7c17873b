package validation

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// A service's own KEDA triggers (spec.scaling.keda.triggers) become a
// ScaledObject in its namespace, which the KEDA operator runs with its own
// network position and whatever credentials the trigger's authentication
// names. So that a service cannot make KEDA send the platform's
// credentials, or any request, where its author chooses:
//   - a trigger may name only a TriggerAuthentication of the service's
//     namespace, never a ClusterTriggerAuthentication (always refused), nor
//     the platform's own authentication (TriggerPolicy.PlatformAuth);
//   - a trigger reaches only addresses the platform allows
//     (TriggerPolicy.Addresses): a trigger type is accepted only when it
//     makes no request (cpu, memory, cron, kubernetes-workload) or when every
//     metadata key that names where it sends its requests is known here
//     (triggerAddressKeys), and each such address is allowed.

// MsgClusterTriggerAuth is why a service's trigger may not name a
// ClusterTriggerAuthentication.
const MsgClusterTriggerAuth = "a service's own triggers may use only a TriggerAuthentication of the service's namespace: " +
	"a ClusterTriggerAuthentication holds credentials the platform keeps for itself, which KEDA would send wherever the trigger says"

// localTriggers make no network request of their own: the metrics API,
// the clock, the pods of the namespace.
var localTriggers = []string{"cpu", "memory", "cron", "kubernetes-workload"}

// triggerAddressKeys are the trigger types whose requests go only to the
// addresses in these metadata keys (KEDA's scaler documentation). A type
// not listed here, nor in localTriggers, may carry an address under a key
// this list does not know (kafka's bootstrapServers, redis's hosts,
// external's scalerAddress, ...), so it is refused.
var triggerAddressKeys = map[string][]string{
	"prometheus":  {"serverAddress"},
	"metrics-api": {"url"},
	"loki":        {"serverAddress"},
	"graphite":    {"serverAddress"},
}

// TriggerPolicy is what the platform lets a service's own KEDA triggers
// use. The zero value allows no address and no platform authentication.
type TriggerPolicy struct {
	// PlatformAuth is the name of the platform's TriggerAuthentication (or
	// ClusterTriggerAuthentication) for its Prometheus, which the
	// ScaledObjects of wva.keda use and a service's triggers may not.
	// Empty: none.
	PlatformAuth string
	// Addresses are the server addresses a trigger may name: a trigger's
	// address must have the scheme and host (with port) of one of them, and
	// a path at or below its path. Empty: none.
	Addresses []string
}

// ValidateTriggers checks the triggers of spec.scaling.keda and
// spec.prefill.scaling.keda against the platform's policy.
func ValidateTriggers(spec *v1alpha2.LLMInferenceServiceSpec, policy TriggerPolicy) field.ErrorList {
	path := field.NewPath("spec")
	errs := policy.check(&spec.WorkloadSpec, path.Child("scaling"))
	if spec.Prefill != nil {
		errs = append(errs, policy.check(spec.Prefill, path.Child("prefill", "scaling"))...)
	}
	return errs
}

func (p TriggerPolicy) check(w *v1alpha2.WorkloadSpec, path *field.Path) field.ErrorList {
	if w.Scaling == nil || w.Scaling.KEDA == nil {
		return nil
	}
	var errs field.ErrorList
	for i, t := range w.Scaling.KEDA.Triggers {
		tp := path.Child("keda", "triggers").Index(i)
		if ref := t.AuthenticationRef; ref != nil && p.PlatformAuth != "" && ref.Name == p.PlatformAuth {
			errs = append(errs, field.Forbidden(tp.Child("authenticationRef", "name"), fmt.Sprintf(
				"%q is the platform's own authentication for its Prometheus (autoscaling.prometheus.triggerAuthentication in the chart); "+
					"a service's triggers use a TriggerAuthentication of their own", ref.Name)))
		}
		errs = append(errs, p.checkAddresses(t, tp)...)
	}
	return errs
}

// checkAddresses refuses a trigger type whose addresses cannot be checked,
// and any address that is not allowed.
func (p TriggerPolicy) checkAddresses(t v1alpha2.KEDATrigger, path *field.Path) field.ErrorList {
	if slices.Contains(localTriggers, t.Type) {
		return nil
	}
	keys, ok := triggerAddressKeys[t.Type]
	if !ok {
		known := append(slices.Clone(localTriggers), slices.Sorted(maps.Keys(triggerAddressKeys))...)
		return field.ErrorList{field.NotSupported(path.Child("type"), t.Type, known)}
	}
	var errs field.ErrorList
	for _, k := range keys {
		mp := path.Child("metadata")
		if _, ok := t.Metadata[k+"FromEnv"]; ok {
			errs = append(errs, field.Forbidden(mp.Key(k+"FromEnv"), "the address must be written in the trigger, where it can be checked"))
		}
		v, ok := t.Metadata[k]
		if !ok {
			continue
		}
		if !p.allows(v) {
			errs = append(errs, field.Forbidden(mp.Child(k), fmt.Sprintf("%q is not an address this platform lets triggers reach; allowed: %s "+
				"(autoscaling.keda.allowedServerAddresses and autoscaling.prometheus.url in the chart)", v, p.allowedList())))
		}
	}
	return errs
}

// allows reports whether address is at or below one of the allowed
// addresses: the same scheme and host, no user information, and a path
// equal to the allowed one or below it.
func (p TriggerPolicy) allows(address string) bool {
	u, err := url.Parse(address)
	if err != nil || u.User != nil || u.Host == "" || u.Opaque != "" {
		return false
	}
	// A path that climbs (..) or doubles a slash is not judged by its
	// prefix: it must already be clean.
	if c := path.Clean(u.Path); u.Path != "" && u.Path != c && u.Path != c+"/" {
		return false
	}
	for _, a := range p.Addresses {
		allowed, err := url.Parse(a)
		if err != nil || allowed.Host == "" {
			continue
		}
		if !strings.EqualFold(u.Scheme, allowed.Scheme) || !strings.EqualFold(u.Host, allowed.Host) {
			continue
		}
		base := strings.TrimSuffix(allowed.Path, "/")
		if base == "" || u.Path == base || strings.HasPrefix(u.Path, base+"/") {
			return true
		}
	}
	return false
}

func (p TriggerPolicy) allowedList() string {
	if len(p.Addresses) == 0 {
		return "none"
	}
	return strings.Join(p.Addresses, ", ")
}
