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

	mu sync.Mutex
	// byNamespace holds the presets of each namespace listed, by name: a
	// listing replaces its namespace's, so a deleted config is forgotten
	// at the next (forget drops it at once, from its watch event).
	byNamespace map[string]map[string]cachedPreset
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
		// The cache's own objects, not copies: preset copies what it keeps,
		// and nothing here writes to them.
		list := &v1alpha2.LLMInferenceServiceConfigList{}
		if err := c.reader.List(ctx, list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list LLMInferenceServiceConfigs in namespace %s: %w", ns, err)
		}
		user = append(user, c.presets(ns, list.Items)...)
	}
	return preset.Overlay(c.systemNamespace, c.builtin, user)
}

// presets returns the presets of the configs of namespace, compiling only
// those new or changed since the last listing, and keeps exactly these.
func (c *presetCache) presets(namespace string, configs []v1alpha2.LLMInferenceServiceConfig) []*preset.Preset {
	c.mu.Lock()
	defer c.mu.Unlock()
	before := c.byNamespace[namespace]
	now := make(map[string]cachedPreset, len(configs))
	out := make([]*preset.Preset, 0, len(configs))
	for i := range configs {
		cfg := &configs[i]
		got, ok := before[cfg.Name]
		if !ok || got.resourceVersion != cfg.ResourceVersion {
			got = cachedPreset{
				resourceVersion: cfg.ResourceVersion,
				preset:          &preset.Preset{Name: cfg.Name, Namespace: cfg.Namespace, Spec: cfg.Spec.DeepCopy()},
			}
		}
		now[cfg.Name] = got
		out = append(out, got.preset)
	}
	if c.byNamespace == nil {
		c.byNamespace = map[string]map[string]cachedPreset{}
	}
	if len(now) == 0 {
		delete(c.byNamespace, namespace)
	} else {
		c.byNamespace[namespace] = now
	}
	return out
}

// forget drops a deleted config's preset.
func (c *presetCache) forget(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byNamespace[namespace], name)
	if len(c.byNamespace[namespace]) == 0 {
		delete(c.byNamespace, namespace)
	}
}
