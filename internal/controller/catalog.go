package controller

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/merge"
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

// shape is the service's spec merged with its baseRefs: what picks the
// well-known presets, and where route, gateway and pool references are
// read from.
func shape(svc *v1alpha2.LLMInferenceService, catalog *preset.Catalog) (*v1alpha2.LLMInferenceServiceSpec, error) {
	if len(svc.Spec.BaseRefs) == 0 {
		return &svc.Spec, nil
	}
	layers := make([]merge.Layer, 0, len(svc.Spec.BaseRefs)+1)
	for i, ref := range svc.Spec.BaseRefs {
		p, err := catalog.Lookup(ref.Name, svc.Namespace)
		if err != nil {
			return nil, fmt.Errorf("spec.baseRefs[%d]: %w", i, err)
		}
		l, err := p.Layer()
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	compiled, err := merge.Compile(&svc.Spec)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	spec, _, err := merge.Specs(append(layers, merge.Layer{Name: "service", Spec: &svc.Spec, Compiled: compiled}))
	return spec, err
}
