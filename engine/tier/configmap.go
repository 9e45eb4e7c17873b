package tier

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Why a tier ConfigMap cannot be used. The errors of FromConfigMap and
// NotFound wrap one of them, and name the ConfigMap (namespace/name) and
// the key.
var (
	// ErrNoConfigMap: the ConfigMap does not exist (NotFound).
	ErrNoConfigMap = errors.New("not found")
	// ErrNoKey: the ConfigMap has no key tiers.
	ErrNoKey = errors.New("no key " + ConfigMapKey)
	// ErrMalformed: the key's value is not a YAML list of tiers, or a
	// tier has a field that is misspelt or of the wrong type.
	ErrMalformed = errors.New("not a YAML list of {name, displayName, description, level, groups}")
	// ErrNoTiers: the list is empty.
	ErrNoTiers = errors.New("no tiers")
	// ErrInvalidTiers: a tier has no name, a name another has, a name
	// that makes no namespace name, or an empty group.
	ErrInvalidTiers = errors.New("invalid tiers")
)

// Source says where the tier list is and how the tiers' namespaces are
// named. The controller and the MaaS API server take the same flags for
// it (internal/cli registers them), so the chart passes both the same
// values.
type Source struct {
	// ConfigMapNamespace holds the ConfigMap; empty: the caller's system
	// namespace.
	ConfigMapNamespace string
	// ConfigMapName names it. Default: tier-to-group-mapping.
	ConfigMapName string
	// NamespacePrefix names the tiers' namespaces. Default:
	// maas-default-gateway-tier-.
	NamespacePrefix string
}

// Defaults returns s with its defaults set, the ConfigMap's namespace
// defaulting to systemNamespace.
func (s Source) Defaults(systemNamespace string) Source {
	if s.ConfigMapNamespace == "" {
		s.ConfigMapNamespace = systemNamespace
	}
	if s.ConfigMapName == "" {
		s.ConfigMapName = ConfigMapName
	}
	if s.NamespacePrefix == "" {
		s.NamespacePrefix = DefaultNamespacePrefix
	}
	return s
}

// FromConfigMap reads the tier list from its ConfigMap, with prefix
// naming the tiers' namespaces (empty: DefaultNamespacePrefix). Every
// reader of the ConfigMap (the controller, the MaaS API server, offline
// render) calls it, so a bad ConfigMap gets the same error from each: it
// names the ConfigMap and the key, and wraps ErrNoKey, ErrMalformed,
// ErrNoTiers or ErrInvalidTiers.
func FromConfigMap(cm *corev1.ConfigMap, prefix string) (*Config, error) {
	data, ok := cm.Data[ConfigMapKey]
	if !ok {
		return nil, fmt.Errorf("%s: %w", configMapName(cm.Namespace, cm.Name), ErrNoKey)
	}
	c, err := Parse(data, prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", configMapName(cm.Namespace, cm.Name), err)
	}
	return c, nil
}

// NotFound is the error of a tier ConfigMap that does not exist: it names
// the ConfigMap and wraps ErrNoConfigMap.
func NotFound(namespace, name string) error {
	return fmt.Errorf("%s: %w", configMapName(namespace, name), ErrNoConfigMap)
}

// configMapName is "ConfigMap namespace/name", or "ConfigMap name" for one
// read from a file without a namespace.
func configMapName(namespace, name string) string {
	if namespace == "" {
		return "ConfigMap " + name
	}
	return "ConfigMap " + namespace + "/" + name
}
