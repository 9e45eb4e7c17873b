package tiertest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// Namespace and Name are where the bad ConfigMaps are.
const (
	Namespace = "maas-system"
	Name      = tier.ConfigMapName
)

// Case is a bad tier ConfigMap and the sentinel its readers' errors wrap.
type Case struct {
	Name string
	// Data is the ConfigMap's data; nil with Absent.
	Data map[string]string
	// Absent: there is no ConfigMap. Offline render, whose input may
	// simply hold no tier list, skips it.
	Absent bool
	// Err is the sentinel of tier the error wraps.
	Err error
}

// ConfigMap is the case's ConfigMap, nil when Absent.
func (c Case) ConfigMap() *corev1.ConfigMap {
	if c.Absent {
		return nil
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: Name},
		Data:       c.Data,
	}
}

// Want is the error every reader's error must contain: tier's own, from
// tier.FromConfigMap (or tier.NotFound when Absent), with prefix naming
// the tiers' namespaces.
func (c Case) Want(prefix string) error {
	if c.Absent {
		return tier.NotFound(Namespace, Name)
	}
	_, err := tier.FromConfigMap(c.ConfigMap(), prefix)
	return err
}

// Bad are the bad ConfigMaps, one of each sentinel at least.
func Bad() []Case {
	return []Case{
		{Name: "no ConfigMap", Absent: true, Err: tier.ErrNoConfigMap},
		{Name: "no key", Data: map[string]string{"tier": "- {name: free}"}, Err: tier.ErrNoKey},
		{Name: "no data", Data: nil, Err: tier.ErrNoKey},
		{Name: "not YAML", Data: map[string]string{tier.ConfigMapKey: "- name: [free"}, Err: tier.ErrMalformed},
		{Name: "misspelt field", Data: map[string]string{tier.ConfigMapKey: "- {name: premium, levl: 1}"}, Err: tier.ErrMalformed},
		{Name: "empty list", Data: map[string]string{tier.ConfigMapKey: "[]"}, Err: tier.ErrNoTiers},
		{Name: "empty value", Data: map[string]string{tier.ConfigMapKey: ""}, Err: tier.ErrNoTiers},
		{Name: "duplicate name", Data: map[string]string{tier.ConfigMapKey: "- name: free\n- name: free\n"}, Err: tier.ErrInvalidTiers},
		{Name: "not a namespace", Data: map[string]string{tier.ConfigMapKey: "- name: Free_Tier\n"}, Err: tier.ErrInvalidTiers},
	}
}
