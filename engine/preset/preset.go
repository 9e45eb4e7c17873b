package preset

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/merge"
)

// DefaultPrefix is put before the well-known preset names, as KServe does, so
// that existing baseRefs such as kserve-config-llm-template keep working.
const DefaultPrefix = "kserve-"

// The well-known presets, without the prefix.
const (
	Template                      = "config-llm-template"
	DecodeTemplate                = "config-llm-decode-template"
	PrefillTemplate               = "config-llm-prefill-template"
	WorkerDataParallel            = "config-llm-worker-data-parallel"
	DecodeWorkerDataParallel      = "config-llm-decode-worker-data-parallel"
	PrefillWorkerDataParallel     = "config-llm-prefill-worker-data-parallel"
	WorkerPipelineParallel        = "config-llm-worker-pipeline-parallel"
	DecodeWorkerPipelineParallel  = "config-llm-decode-worker-pipeline-parallel"
	PrefillWorkerPipelineParallel = "config-llm-prefill-worker-pipeline-parallel"
	Scheduler                     = "config-llm-scheduler"
	RouterRoute                   = "config-llm-router-route"
)

// WellKnownNames lists every well-known preset, without the prefix.
var WellKnownNames = []string{
	Template, DecodeTemplate, PrefillTemplate,
	WorkerDataParallel, DecodeWorkerDataParallel, PrefillWorkerDataParallel,
	WorkerPipelineParallel, DecodeWorkerPipelineParallel, PrefillWorkerPipelineParallel,
	Scheduler, RouterRoute,
}

// Preset is a found preset.
type Preset struct {
	Name      string
	Namespace string
	// File is where the preset was read from, when it came from a file.
	File string
	Spec *v1alpha2.LLMInferenceServiceSpec

	compileOnce sync.Once
	compiled    *merge.Compiled
	compileErr  error
}

// Compiled is the preset as a merge layer, compiled on first use and shared
// by every render after it. The Spec must not change once this is called.
func (p *Preset) Compiled() (*merge.Compiled, error) {
	p.compileOnce.Do(func() {
		p.compiled, p.compileErr = merge.Compile(p.Spec)
		if p.compileErr != nil {
			p.compileErr = fmt.Errorf("preset %s: %w", p.ID(), p.compileErr)
		}
	})
	return p.compiled, p.compileErr
}

// Layer is the preset as a merge layer.
func (p *Preset) Layer() (merge.Layer, error) {
	c, err := p.Compiled()
	return merge.Layer{Name: p.ID(), Spec: p.Spec, Compiled: c}, err
}

// ID names the preset in messages: namespace/name, and the file if known.
func (p *Preset) ID() string {
	id := p.Namespace + "/" + p.Name
	if p.File != "" {
		id += " (" + p.File + ")"
	}
	return id
}

// Catalog holds the presets a render can see, across namespaces.
type Catalog struct {
	systemNamespace string
	byKey           map[string]*Preset
	// base, when set, holds presets of the system namespace below byKey's,
	// loaded on the first Lookup that needs them (see OverlayLazy).
	base *lazyBase
}

// lazyBase loads base presets once, on first use.
type lazyBase struct {
	once    sync.Once
	load    func() ([]*Preset, error)
	catalog *Catalog
	err     error
}

func (b *lazyBase) get(systemNamespace string) (*Catalog, error) {
	b.once.Do(func() {
		ps, err := b.load()
		if err == nil {
			b.catalog, err = NewCatalog(systemNamespace, ps)
		}
		b.err = err
	})
	return b.catalog, b.err
}

// ErrNotFound is wrapped by the error Lookup returns for a missing preset.
var ErrNotFound = errors.New("preset not found")

// NewCatalog indexes presets. Presets without a namespace belong to the
// system namespace. Two presets with one namespace and name are an error.
func NewCatalog(systemNamespace string, presets []*Preset) (*Catalog, error) {
	c := &Catalog{systemNamespace: systemNamespace, byKey: make(map[string]*Preset, len(presets))}
	for _, p := range presets {
		if p.Namespace == "" {
			p.Namespace = systemNamespace
		}
		key := p.Namespace + "/" + p.Name
		if prev, dup := c.byKey[key]; dup {
			return nil, fmt.Errorf("preset %s is defined twice: %s and %s", key, prev.ID(), p.ID())
		}
		c.byKey[key] = p
	}
	return c, nil
}

// Overlay indexes base presets with top ones over them: a top preset with
// the namespace and name of a base one replaces it. Two top presets with
// one namespace and name are still an error.
func Overlay(systemNamespace string, base, top []*Preset) (*Catalog, error) {
	key := func(p *Preset) string {
		if p.Namespace == "" {
			return systemNamespace + "/" + p.Name
		}
		return p.Namespace + "/" + p.Name
	}
	replaced := make(map[string]bool, len(top))
	for _, p := range top {
		replaced[key(p)] = true
	}
	all := make([]*Preset, 0, len(base)+len(top))
	for _, p := range base {
		if !replaced[key(p)] {
			all = append(all, p)
		}
	}
	return NewCatalog(systemNamespace, append(all, top...))
}

// OverlayLazy is Overlay with base presets that all live in the system
// namespace and are loaded only when a Lookup finds no top preset: the
// first such Lookup calls base, once. A render whose presets all come
// from top (a chart's stream carries every built-in preset) never loads
// base.
func OverlayLazy(systemNamespace string, base func() ([]*Preset, error), top []*Preset) (*Catalog, error) {
	c, err := NewCatalog(systemNamespace, top)
	if err != nil {
		return nil, err
	}
	c.base = &lazyBase{load: base}
	return c, nil
}

// Lookup finds a preset in namespace first, then in the system namespace.
func (c *Catalog) Lookup(name, namespace string) (*Preset, error) {
	if p, ok := c.byKey[namespace+"/"+name]; ok {
		return p, nil
	}
	if p, ok := c.byKey[c.systemNamespace+"/"+name]; ok {
		return p, nil
	}
	if c.base != nil {
		base, err := c.base.get(c.systemNamespace)
		if err != nil {
			return nil, err
		}
		if p, ok := base.byKey[c.systemNamespace+"/"+name]; ok {
			return p, nil
		}
	}
	if namespace == c.systemNamespace {
		return nil, fmt.Errorf("%w: LLMInferenceServiceConfig %q is not in the system namespace %q", ErrNotFound, name, c.systemNamespace)
	}
	return nil, fmt.Errorf("%w: LLMInferenceServiceConfig %q is neither in namespace %q nor in the system namespace %q",
		ErrNotFound, name, namespace, c.systemNamespace)
}

// All returns every preset, sorted by namespace and name. It loads the
// lazy base presets, if any; ones that do not load are left out.
func (c *Catalog) All() []*Preset {
	out := make([]*Preset, 0, len(c.byKey))
	for _, p := range c.byKey {
		out = append(out, p)
	}
	if c.base != nil {
		if base, err := c.base.get(c.systemNamespace); err == nil {
			for key, p := range base.byKey {
				if _, replaced := c.byKey[key]; !replaced {
					out = append(out, p)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b *Preset) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	return out
}

// WellKnown returns the names (with prefix) of the well-known presets a spec
// of this shape needs, in merge order. spec is the service merged with its
// baseRefs.
func WellKnown(spec *v1alpha2.LLMInferenceServiceSpec, prefix string) []string {
	var names []string
	if r := spec.Router; r != nil {
		if r.Scheduler != nil && (r.Scheduler.Pool == nil || r.Scheduler.Pool.Ref == nil) {
			names = append(names, Scheduler)
		}
		if r.Route != nil && (r.Route.HTTP == nil || len(r.Route.HTTP.Refs) == 0) {
			names = append(names, RouterRoute)
		}
	}
	if spec.Prefill != nil {
		names = appendWorkload(names, spec.Prefill, PrefillTemplate, PrefillWorkerDataParallel, PrefillWorkerPipelineParallel)
		names = appendWorkload(names, &spec.WorkloadSpec, DecodeTemplate, DecodeWorkerDataParallel, DecodeWorkerPipelineParallel)
	} else {
		names = appendWorkload(names, &spec.WorkloadSpec, Template, WorkerDataParallel, WorkerPipelineParallel)
	}
	for i := range names {
		names[i] = prefix + names[i]
	}
	return names
}

// appendWorkload adds the preset for one workload. A worker with neither
// data nor pipeline parallelism gets none; validation reports it.
func appendWorkload(names []string, w *v1alpha2.WorkloadSpec, single, dataParallel, pipelineParallel string) []string {
	switch {
	case w.Worker == nil:
		return append(names, single)
	case w.Parallelism.IsDataParallel():
		return append(names, dataParallel)
	case w.Parallelism.IsPipelineParallel():
		return append(names, pipelineParallel)
	default:
		return names
	}
}
