package fieldpath

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Visit is called for every leaf with its path, its value and a function
// that replaces it (values held in maps cannot be set through reflect).
type Visit func(path string, v reflect.Value, set func(reflect.Value)) error

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
	rv := reflect.ValueOf(v)
	return walker{mode, visit}.walk(root, rv, func(nv reflect.Value) { rv.Set(nv) })
}

type walker struct {
	mode  Mode
	visit Visit
}

func (w walker) walk(path string, v reflect.Value, set func(reflect.Value)) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		e := v.Elem()
		return w.walk(path, e, func(nv reflect.Value) { e.Set(nv) })
	case reflect.Struct:
		if opaque(v.Type()) {
			return w.leaf(path, v, set)
		}
		return w.walkStruct(path, v)
	case reflect.Map:
		keys := v.MapKeys()
		names := make(map[string]reflect.Value, len(keys))
		order := make([]string, 0, len(keys))
		for _, k := range keys {
			s := fmt.Sprint(k.Interface())
			names[s] = k
			order = append(order, s)
		}
		slices.Sort(order)
		for _, s := range order {
			k := names[s]
			holder := reflect.New(v.Type().Elem()).Elem()
			holder.Set(v.MapIndex(k))
			if err := w.walk(path+"["+s+"]", holder, func(nv reflect.Value) { holder.Set(nv) }); err != nil {
				return err
			}
			v.SetMapIndex(k, holder)
		}
		return nil
	case reflect.Slice:
		if v.Len() == 0 {
			return nil
		}
		if w.mode == Fields {
			return w.visit(path, v, set)
		}
		for i := range v.Len() {
			item := v.Index(i)
			if err := w.walk(fmt.Sprintf("%s[%d]", path, i), item, func(nv reflect.Value) { item.Set(nv) }); err != nil {
				return err
			}
		}
		return nil
	default:
		return w.leaf(path, v, set)
	}
}

func (w walker) leaf(path string, v reflect.Value, set func(reflect.Value)) error {
	if v.IsZero() {
		return nil
	}
	return w.visit(path, v, set)
}

func (w walker) walkStruct(path string, v reflect.Value) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		child := path
		if !f.Anonymous || name != "" {
			if name == "" {
				name = f.Name
			}
			child = path + "." + name
		}
		fv := v.Field(i)
		setField := func(nv reflect.Value) { fv.Set(nv) }
		if key := mergeKey(f); key != "" && fv.Kind() == reflect.Slice {
			if err := w.walkKeyed(child, fv, key); err != nil {
				return err
			}
			continue
		}
		if err := w.walk(child, fv, setField); err != nil {
			return err
		}
	}
	return nil
}

// walkKeyed walks a list that merges by key, naming each item by its key.
func (w walker) walkKeyed(path string, v reflect.Value, key string) error {
	for i := range v.Len() {
		item := v.Index(i)
		id := fmt.Sprint(i)
		if kv, ok := jsonField(item, key); ok {
			id = key + "=" + fmt.Sprint(kv.Interface())
		}
		if err := w.walk(path+"["+id+"]", item, func(nv reflect.Value) { item.Set(nv) }); err != nil {
			return err
		}
	}
	return nil
}

// mergeKey is the strategic-merge key of a list field, or "" when the list
// is replaced whole.
func mergeKey(f reflect.StructField) string {
	if !strings.Contains(f.Tag.Get("patchStrategy"), "merge") {
		return ""
	}
	return f.Tag.Get("patchMergeKey")
}

func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// opaque reports types that are one value in YAML though they are structs
// in Go: quantities, int-or-strings, times, durations.
func opaque(t reflect.Type) bool {
	switch t.PkgPath() + "." + t.Name() {
	case "k8s.io/apimachinery/pkg/api/resource.Quantity",
		"k8s.io/apimachinery/pkg/util/intstr.IntOrString",
		"k8s.io/apimachinery/pkg/apis/meta/v1.Time",
		"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime",
		"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":
		return true
	}
	return false
}
