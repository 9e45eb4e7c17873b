package offline

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
)

// isConfigMap reports whether d is a core ConfigMap.
func isConfigMap(d manifest.Document) bool {
	return d.Object.GetKind() == "ConfigMap" && d.Object.GetAPIVersion() == "v1"
}

// inputConfigMaps is what the engine finds when a service names a ConfigMap
// (spec.router.scheduler.config.ref) offline: the ConfigMaps of the input,
// one with no namespace in defaultNamespace, where the services without one
// go too. A ConfigMap whose data is not all strings is an error when named.
func inputConfigMaps(docs []manifest.Document, defaultNamespace string) engine.ConfigMapLookup {
	type entry struct {
		data map[string]string
		err  error
	}
	found := map[types.NamespacedName]entry{}
	for _, d := range docs {
		if !isConfigMap(d) {
			continue
		}
		key := types.NamespacedName{Namespace: d.Object.GetNamespace(), Name: d.Object.GetName()}
		if key.Namespace == "" {
			key.Namespace = defaultNamespace
		}
		data, _, err := unstructured.NestedStringMap(d.Object.Object, "data")
		if err != nil {
			err = fmt.Errorf("%s: ConfigMap %s: %w", d.Where(), key, err)
		}
		found[key] = entry{data: data, err: err}
	}
	return func(namespace, name string) (map[string]string, bool, error) {
		e, ok := found[types.NamespacedName{Namespace: namespace, Name: name}]
		return e.data, ok, e.err
	}
}
