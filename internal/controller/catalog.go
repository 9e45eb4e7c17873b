package controller

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/preset"
)

// presetCache turns the LLMInferenceServiceConfigs in the cache into
// presets, once per resourceVersion, so each preset is compiled into a
// merge layer once and not on every reconcile.
type presetCache struct {
	reader          client.Reader
	systemNamespace string
	builtin         []*preset.Preset

	mu   sync.Mutex
	byID map[string]cachedPreset // namespace/name
}

type cachedPreset struct {
	resourceVersion string
	preset          *preset.Preset
}

// catalog is the embedded presets with the configs of the system namespace
// and of namespace over them.
func (c *presetCache) catalog(ctx context.Context, namespace string) (*preset.Catalog, error) {
	namespaces := []string{c.systemNamespace}
	if namespace != c.systemNamespace {
		namespaces = append(namespaces, namespace)
	}
	var user []*preset.Preset
	for _, ns := range namespaces {
		list := &v1alpha2.LLMInferenceServiceConfigList{}
		if err := c.reader.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list LLMInferenceServiceConfigs in namespace %s: %w", ns, err)
		}
		for i := range list.Items {
			user = append(user, c.preset(&list.Items[i]))
		}
	}
	return preset.Overlay(c.systemNamespace, c.builtin, user)
}

func (c *presetCache) preset(cfg *v1alpha2.LLMInferenceServiceConfig) *preset.Preset {
	id := cfg.Namespace + "/" + cfg.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, ok := c.byID[id]; ok && got.resourceVersion == cfg.ResourceVersion {
		return got.preset
	}
	p := &preset.Preset{Name: cfg.Name, Namespace: cfg.Namespace, Spec: cfg.Spec.DeepCopy()}
	c.byID[id] = cachedPreset{resourceVersion: cfg.ResourceVersion, preset: p}
	return p
}
