package engine

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// ConfigMapLookup returns the data of the ConfigMap namespace/name, with
// found false when there is none. It may be called from several goroutines.
type ConfigMapLookup func(namespace, name string) (data map[string]string, found bool, err error)

// SharedSchedulerConfigPrefix starts the names of ConfigMaps that a
// service may share from the system namespace: a ref to such a name that
// the service's own namespace lacks is looked for there, as KServe does.
const SharedSchedulerConfigPrefix = "config-scheduler-"

// ErrConfigMapNotFound is wrapped by the error of a service whose
// spec.router.scheduler.config.ref names a ConfigMap that does not exist:
// it may be created later, unlike the other render errors.
var ErrConfigMapNotFound = errors.New("ConfigMap not found")

// resolveSchedulerConfig puts the configuration in the ConfigMap key that
// spec.router.scheduler.config.ref names into config.inline (as JSON),
// where the endpoint picker's --config-text comes from, and drops the ref. An
// inline configuration wins over a ref, and an optional ref to a missing
// ConfigMap or key leaves the presets' configuration. It returns where the
// text came from, as namespace/name:key.
func resolveSchedulerConfig(spec *v1alpha2.LLMInferenceServiceSpec, namespace, systemNamespace string, lookup ConfigMapLookup) (string, error) {
	if spec.Router == nil || spec.Router.Scheduler == nil || spec.Router.Scheduler.Config == nil {
		return "", nil
	}
	cfg := spec.Router.Scheduler.Config
	ref := cfg.Ref
	if ref == nil || cfg.Inline != nil && len(cfg.Inline.Raw) > 0 {
		return "", nil
	}
	const path = "spec.router.scheduler.config.ref"
	if ref.Name == "" || ref.Key == "" {
		return "", fmt.Errorf("%s: name and key are required", path)
	}
	key := ref.Key // required by validation, as in the CRD
	optional := ref.Optional != nil && *ref.Optional
	if lookup == nil {
		lookup = func(string, string) (map[string]string, bool, error) { return nil, false, nil }
	}
	searched := []string{namespace}
	data, found, err := lookup(namespace, ref.Name)
	if err == nil && !found && strings.HasPrefix(ref.Name, SharedSchedulerConfigPrefix) && systemNamespace != namespace {
		searched = append(searched, systemNamespace)
		data, found, err = lookup(systemNamespace, ref.Name)
	}
	where := searched[len(searched)-1] + "/" + ref.Name
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: read ConfigMap %s: %w", path, where, err)
	case !found && optional:
		cfg.Ref = nil
		return "", nil
	case !found:
		return "", fmt.Errorf("%s: %w: %s in namespace %s", path, ErrConfigMapNotFound, ref.Name, strings.Join(searched, " or "))
	}
	text, ok := data[key]
	switch {
	case !ok && optional:
		cfg.Ref = nil
		return "", nil
	case !ok:
		return "", fmt.Errorf("%s: ConfigMap %s has no key %q", path, where, key)
	case strings.TrimSpace(text) == "":
		return "", fmt.Errorf("%s: key %q of ConfigMap %s is empty", path, key, where)
	}
	// As JSON, like an inline configuration that the API server stored.
	raw, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return "", fmt.Errorf("%s: key %q of ConfigMap %s is not YAML: %w", path, key, where, err)
	}
	cfg.Inline = &runtime.RawExtension{Raw: raw}
	cfg.Ref = nil
	return where + ":" + key, nil
}
