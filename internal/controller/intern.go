package controller

import (
	"reflect"
	"slices"
	"sync"
	"unique"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// cacheTransform is what the manager's cache does to every object before
// keeping it: it drops the managed fields, which nothing reads, interns
// the object's strings and trims its slices to their length.
//
// Why interning: the children of services made from the same presets
// carry the same strings (label keys and values, images, arguments,
// environment, probes, RBAC rules, owner references), and each decoded
// object holds its own copy of every one. Sharing them keeps the same
// objects, field for field, in less memory (strings are immutable, so
// nothing can tell). unique drops a canonical string once no object
// holds it, so names of deleted services are not kept.
func cacheTransform(in any) (any, error) {
	if obj, err := meta.Accessor(in); err == nil && obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	internStrings(reflect.ValueOf(in))
	return in, nil
}

var _ toolscache.TransformFunc = cacheTransform

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internStrings replaces, in place, every string reachable from v through
// exported fields, pointers, slices, arrays, maps and interfaces by its
// interned copy, and gives each slice it goes through a capacity equal to
// its length. Map keys and values are stored again, interned; unexported
// fields are left as they are.
func internStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			internStrings(v.Elem())
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(intern(v.String()))
		}
	case reflect.Struct:
		for _, i := range stringFields(v.Type()) {
			internStrings(v.Field(i))
		}
	case reflect.Slice:
		if v.CanSet() && v.Cap() > v.Len() {
			// Decoders append one item at a time: give back the
			// capacity they grew beyond the items.
			exact := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(exact, v)
			v.Set(exact)
		}
		if !holdsStrings(v.Type().Elem()) {
			return
		}
		for i := range v.Len() {
			internStrings(v.Index(i))
		}
	case reflect.Array:
		if !holdsStrings(v.Type().Elem()) {
			return
		}
		for i := range v.Len() {
			internStrings(v.Index(i))
		}
	case reflect.Map:
		internMap(v)
	}
}

// internMap interns a map's keys and values. Storing a value under an
// equal key replaces the stored key too, so the map then holds the
// interned key; no key is added or removed.
func internMap(v reflect.Value) {
	if v.IsNil() || v.Len() == 0 {
		return
	}
	switch m := v.Interface().(type) {
	case map[string]string:
		for k, s := range m {
			m[intern(k)] = intern(s)
		}
		return
	case map[string]any:
		// Unstructured objects.
		for k, x := range m {
			m[intern(k)] = internAny(x)
		}
		return
	}
	t := v.Type()
	keys, values := t.Key().Kind() == reflect.String, holdsStrings(t.Elem())
	if !keys && !values {
		return
	}
	iter := v.MapRange()
	for iter.Next() {
		k, x := iter.Key(), iter.Value()
		if keys {
			k = reflect.ValueOf(intern(k.String())).Convert(t.Key())
		}
		if values {
			c := reflect.New(t.Elem()).Elem()
			c.Set(x)
			internStrings(c)
			x = c
		}
		v.SetMapIndex(k, x)
	}
}

// internAny interns the strings of a value of an unstructured object.
func internAny(x any) any {
	switch y := x.(type) {
	case string:
		return intern(y)
	case map[string]any:
		for k, z := range y {
			y[intern(k)] = internAny(z)
		}
	case []any:
		if cap(y) > len(y) {
			y = slices.Clone(y)
		}
		for i, z := range y {
			y[i] = internAny(z)
		}
		return y
	}
	return x
}

// Per type: the fields worth visiting, and whether it can hold a string.
var (
	fieldsOf sync.Map // reflect.Type -> []int
	stringy  sync.Map // reflect.Type -> bool
)

// stringFields are the indexes of t's exported fields that can hold a
// string.
func stringFields(t reflect.Type) []int {
	if f, ok := fieldsOf.Load(t); ok {
		return f.([]int)
	}
	var out []int
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && holdsStrings(f.Type) {
			out = append(out, i)
		}
	}
	fieldsOf.Store(t, out)
	return out
}

// holdsStrings reports whether a value of type t can reach a string
// through exported fields.
func holdsStrings(t reflect.Type) bool {
	if b, ok := stringy.Load(t); ok {
		return b.(bool)
	}
	// Recursive types: assume yes while t is being looked at.
	stringy.Store(t, true)
	var b bool
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		b = true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		b = holdsStrings(t.Elem())
	case reflect.Map:
		b = t.Key().Kind() == reflect.String || holdsStrings(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsStrings(f.Type) {
				b = true
				break
			}
		}
	}
	stringy.Store(t, b)
	return b
}
