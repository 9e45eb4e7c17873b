package merge

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kjson "sigs.k8s.io/json"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/fieldpath"
)

// Layer is one spec in the merge order, named for messages and provenance.
type Layer struct {
	// Name says where the spec comes from: a preset's namespace/name, or
	// the service itself.
	Name string
	Spec *v1alpha2.LLMInferenceServiceSpec
	// Compiled, when set, is Spec compiled ahead (see Compile).
	Compiled *Compiled
}

// Provenance maps each field path of the merged spec to the layer that set
// it last, and lists the fields each layer set.
type Provenance struct {
	// Winner is the layer whose value a field has.
	Winner map[string]string
	// Set lists, per layer in merge order, the fields it set.
	Set []LayerFields
}

// LayerFields is the fields one layer set.
type LayerFields struct {
	Layer  string
	Fields []string
}

var patchMeta = func() strategicpatch.LookupPatchMeta {
	meta, err := strategicpatch.NewPatchMetaFromStruct(v1alpha2.LLMInferenceServiceSpec{})
	if err != nil {
		panic(fmt.Sprintf("patch metadata of LLMInferenceServiceSpec: %v", err)) // a programming error, found by every test
	}
	return meta
}()

// Compiled is a layer turned into a strategic merge patch, with the fields
// it sets. Compiling a preset once and reusing it keeps renders fast.
type Compiled struct {
	patch  map[string]any
	fields []string
}

// Compile turns a spec into a patch that sets only what the spec sets:
// nulls are dropped so they cannot delete.
func Compile(spec *v1alpha2.LLMInferenceServiceSpec) (*Compiled, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var tree map[string]any
	if err := json.Unmarshal(data, &tree); err != nil {
		return nil, err
	}
	dropNulls(tree)
	// The tree is the patch as it is. A two-way diff would add
	// $setElementOrder directives that put a layer's new list items before
	// the ones it inherits; without them inherited items keep their place
	// and new ones follow, so env vars a later layer adds can refer to
	// earlier ones with $(NAME).
	fields, err := setFields(spec)
	if err != nil {
		return nil, err
	}
	return &Compiled{patch: tree, fields: fields}, nil
}

// Specs merges the layers left to right, later layers winning, and returns
// the merged spec with its provenance. A layer's Compiled form is used when
// set, and computed from its Spec otherwise.
func Specs(layers []Layer) (*v1alpha2.LLMInferenceServiceSpec, *Provenance, error) {
	prov := &Provenance{Winner: map[string]string{}}
	merged := map[string]any{}
	for _, l := range layers {
		c := l.Compiled
		if c == nil {
			if l.Spec == nil {
				prov.Set = append(prov.Set, LayerFields{Layer: l.Name})
				continue
			}
			var err error
			if c, err = Compile(l.Spec); err != nil {
				return nil, nil, fmt.Errorf("merge %s: %w", l.Name, err)
			}
		}
		// The merge may change the patch it is given; compiled patches are shared.
		patch := runtime.DeepCopyJSON(c.patch)
		keepOrder(merged, patch, patchMeta)
		var err error
		merged, err = strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(merged, patch, patchMeta)
		if err != nil {
			return nil, nil, fmt.Errorf("merge %s: %w", l.Name, err)
		}
		prov.Set = append(prov.Set, LayerFields{Layer: l.Name, Fields: c.fields})
		for _, f := range c.fields {
			prov.Winner[f] = l.Name
		}
	}
	// Through JSON, as the API server decodes, rather than apimachinery's
	// unstructured converter: that one copies its whole field cache for
	// every struct field it meets first, which cost 4-5 ms of processor
	// time at the start of every post-render process.
	out := &v1alpha2.LLMInferenceServiceSpec{}
	data, err := json.Marshal(merged)
	if err == nil {
		err = kjson.UnmarshalCaseSensitivePreserveInts(data, out)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("decode merged spec: %w", err)
	}
	return out, prov, nil
}

// keepOrder adds to patch, for every list merged by key, the order the
// result must have: the items the merge already has, in their order, then
// the items the patch adds. Strategic merge would otherwise put the patch's
// items first, so a service's init container would run before the preset's
// and its env vars could not refer to the preset's with $(NAME).
func keepOrder(base, patch map[string]any, meta strategicpatch.LookupPatchMeta) {
	for key, pv := range patch {
		switch p := pv.(type) {
		case []any:
			childMeta, pm, err := meta.LookupPatchMetadataForSlice(key)
			if err != nil || !slices.Contains(pm.GetPatchStrategies(), "merge") || pm.GetPatchMergeKey() == "" {
				continue
			}
			mk := pm.GetPatchMergeKey()
			baseItems, _ := base[key].([]any)
			var order []any
			seen := map[any]bool{}
			add := func(item any) {
				m, ok := item.(map[string]any)
				if !ok || m[mk] == nil || seen[m[mk]] {
					return
				}
				seen[m[mk]] = true
				order = append(order, map[string]any{mk: m[mk]})
			}
			for _, item := range baseItems {
				add(item)
			}
			for _, item := range p {
				add(item)
				if m, ok := item.(map[string]any); ok {
					if bm := findByKey(baseItems, mk, m[mk]); bm != nil {
						keepOrder(bm, m, childMeta)
					}
				}
			}
			if len(baseItems) > 0 {
				patch["$setElementOrder/"+key] = order
				sortLike(p, order, mk)
			}
		case map[string]any:
			childMeta, _, err := meta.LookupPatchMetadataForStruct(key)
			if err != nil {
				continue
			}
			if bm, ok := base[key].(map[string]any); ok {
				keepOrder(bm, p, childMeta)
			}
		}
	}
}

// sortLike puts the items of a patch list in the order of its
// $setElementOrder, which strategic merge requires: a layer may list the
// items it inherits in another order (a service naming a preset's env vars
// in its own order), and the merge refused that with "The order in patch
// list ... doesn't match $setElementOrder list". Items without the merge
// key go last, in their order.
func sortLike(items, order []any, mk string) {
	pos := make(map[any]int, len(order))
	for i, o := range order {
		pos[o.(map[string]any)[mk]] = i
	}
	at := func(item any) int {
		if m, ok := item.(map[string]any); ok {
			if i, ok := pos[m[mk]]; ok {
				return i
			}
		}
		return len(order)
	}
	slices.SortStableFunc(items, func(a, b any) int { return cmp.Compare(at(a), at(b)) })
}

func findByKey(items []any, key string, value any) map[string]any {
	for _, item := range items {
		if m, ok := item.(map[string]any); ok && m[key] == value {
			return m
		}
	}
	return nil
}

func dropNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range t {
			dropNulls(e)
		}
	}
}

// setFields lists the leaf fields a layer sets.
func setFields(spec *v1alpha2.LLMInferenceServiceSpec) ([]string, error) {
	var fields []string
	err := fieldpath.Walk("spec", spec, fieldpath.Fields, func(path *fieldpath.Path, _ reflect.Value) error {
		fields = append(fields, path.String())
		return nil
	})
	return fields, err
}

// Origin returns the layer that set path, or that set the nearest enclosing
// field that was set whole (an item of a list replaced whole).
func (p *Provenance) Origin(path string) string {
	for cur := path; cur != ""; cur = parent(cur) {
		if l, ok := p.Winner[cur]; ok {
			return l
		}
	}
	return ""
}

// parent strips the last segment of a path: a[1].b -> a[1] -> a.
func parent(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		switch path[i] {
		case '.':
			return path[:i]
		case '[':
			return path[:i]
		case ']':
			// skip to the matching '['
			depth := 0
			for j := i; j >= 0; j-- {
				switch path[j] {
				case ']':
					depth++
				case '[':
					depth--
					if depth == 0 {
						return path[:j]
					}
				}
			}
			return ""
		}
	}
	return ""
}
