package fieldpath

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Path is the location of a value. Its text is built only when asked for,
// since most walked fields are never reported.
type Path struct {
	parent *Path
	seg    string
	// field says seg is a field name (".seg"), not an index or key ("[seg]").
	field bool
}

func (p *Path) String() string {
	if p.parent == nil {
		return p.seg
	}
	if p.field {
		return p.parent.String() + "." + p.seg
	}
	return p.parent.String() + "[" + p.seg + "]"
}

func (p *Path) child(name string) *Path { return &Path{parent: p, seg: name, field: true} }
func (p *Path) key(k string) *Path      { return &Path{parent: p, seg: k} }

// Visit is called for every leaf with its path and value. When the walk
// started from a pointer the value is settable, and setting it changes the
// walked object, maps included.
type Visit func(path *Path, v reflect.Value) error

// Mode says how deep Walk goes.
type Mode int

const (
	// Fields stops at lists that merge as a whole: each is one leaf, as it
	// is one value to strategic merge.
	Fields Mode = iota
	// Strings goes into every list as well, to reach every string.
	Strings
)

// Walk visits the leaves of v under the root path. Nil pointers, empty maps
// and lists, and zero scalars are skipped: they are "not set".
func Walk(root string, v any, mode Mode, visit Visit) error {
	return walker{mode, visit}.walk(&Path{seg: root}, reflect.ValueOf(v))
}

type walker struct {
	mode  Mode
	visit Visit
}

func (w walker) walk(path *Path, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return w.walk(path, v.Elem())
	case reflect.Struct:
		if opaque(v.Type()) {
			return w.leaf(path, v)
		}
		return w.walkStruct(path, v)
	case reflect.Map:
		return w.walkMap(path, v)
	case reflect.Slice:
		if v.Len() == 0 {
			return nil
		}
		if w.mode == Fields {
			return w.visit(path, v)
		}
		for i := range v.Len() {
			if err := w.walk(path.key(strconv.Itoa(i)), v.Index(i)); err != nil {
				return err
			}
		}
		return nil
	default:
		return w.leaf(path, v)
	}
}

func (w walker) leaf(path *Path, v reflect.Value) error {
	if v.IsZero() {
		return nil
	}
	return w.visit(path, v)
}

// walkMap walks entries in key order. Map values cannot be set in place, so
// each is walked in a settable copy that is written back.
func (w walker) walkMap(path *Path, v reflect.Value) error {
	if v.Len() == 0 {
		return nil
	}
	keys := v.MapKeys()
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = fmt.Sprint(k.Interface())
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	for _, i := range order {
		holder := reflect.New(v.Type().Elem()).Elem()
		holder.Set(v.MapIndex(keys[i]))
		if err := w.walk(path.key(names[i]), holder); err != nil {
			return err
		}
		if v.CanSet() || v.CanInterface() {
			v.SetMapIndex(keys[i], holder)
		}
	}
	return nil
}

func (w walker) walkStruct(path *Path, v reflect.Value) error {
	for _, f := range structFields(v.Type()) {
		fv := v.Field(f.index)
		if unset(fv) {
			continue // skip before building a path for it
		}
		child := path
		if !f.inline {
			child = path.child(f.name)
		}
		if f.mergeKey != "" && fv.Kind() == reflect.Slice {
			if err := w.walkKeyed(child, fv, f.mergeKey); err != nil {
				return err
			}
			continue
		}
		if err := w.walk(child, fv); err != nil {
			return err
		}
	}
	return nil
}

// walkKeyed walks a list that merges by key, naming each item by its key.
func (w walker) walkKeyed(path *Path, v reflect.Value, key string) error {
	for i := range v.Len() {
		item := v.Index(i)
		id := strconv.Itoa(i)
		if kv, ok := keyField(item, key); ok {
			id = key + "=" + fmt.Sprint(kv.Interface())
		}
		if err := w.walk(path.key(id), item); err != nil {
			return err
		}
	}
	return nil
}

// fieldInfo is what Walk needs of a struct field, read once per type.
type fieldInfo struct {
	index    int
	name     string
	inline   bool
	mergeKey string
}

var (
	fieldCache  sync.Map // reflect.Type -> []fieldInfo
	opaqueCache sync.Map // reflect.Type -> bool
)

func structFields(t reflect.Type) []fieldInfo {
	if cached, ok := fieldCache.Load(t); ok {
		return cached.([]fieldInfo)
	}
	var fields []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		info := fieldInfo{index: i, name: name, inline: f.Anonymous && name == "", mergeKey: mergeKey(f)}
		if info.name == "" {
			info.name = f.Name
		}
		fields = append(fields, info)
	}
	fieldCache.Store(t, fields)
	return fields
}

// mergeKey is the strategic-merge key of a list field, or "" when the list
// is replaced whole.
func mergeKey(f reflect.StructField) string {
	if !strings.Contains(f.Tag.Get("patchStrategy"), "merge") {
		return ""
	}
	return f.Tag.Get("patchMergeKey")
}

func keyField(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	for _, f := range structFields(v.Type()) {
		if f.name == name {
			return v.Field(f.index), true
		}
	}
	return reflect.Value{}, false
}

// opaque reports types that are one value in YAML though they are structs
// in Go: quantities, int-or-strings, times, durations.
func opaque(t reflect.Type) bool {
	if cached, ok := opaqueCache.Load(t); ok {
		return cached.(bool)
	}
	var is bool
	switch t.PkgPath() + "." + t.Name() {
	case "k8s.io/apimachinery/pkg/api/resource.Quantity",
		"k8s.io/apimachinery/pkg/util/intstr.IntOrString",
		"k8s.io/apimachinery/pkg/apis/meta/v1.Time",
		"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime",
		"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":
		is = true
	}
	opaqueCache.Store(t, is)
	return is
}

// unset reports values Walk would skip anyway: nil pointers, empty maps and
// lists, and zero scalars.
func unset(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Struct:
		return false
	default:
		return v.IsZero()
	}
}
