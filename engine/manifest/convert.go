package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// ToUnstructured converts a typed object to a map, as
// runtime.DefaultUnstructuredConverter.ToUnstructured does and with the
// same result. apimachinery's converter remembers each struct field it
// meets by copying its whole cache, so the first conversions in a process
// cost time quadratic in the number of fields: 8 ms of a one-service
// post-render, more than the render itself. This one builds each struct
// type's field table once, in one step. An object of a shape it does not
// handle goes through apimachinery's converter.
func ToUnstructured(obj any) (map[string]any, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		return u.UnstructuredContent(), nil
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct ||
		custom(v.Elem().Type()) {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	out := map[string]any{}
	if err := structInto(out, v.Elem()); err != nil {
		if errors.Is(err, errUnhandled) {
			return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		}
		return nil, err
	}
	return out, nil
}

// errUnhandled marks a shape apimachinery's converter handles differently
// (an inlined field that is not a struct); the caller falls back to it.
var errUnhandled = errors.New("not handled here")

// field is what conversion needs of a struct field.
type field struct {
	index     int
	name      string // empty: inlined
	omitEmpty bool
	omitZero  func(reflect.Value) bool
}

var fieldTables sync.Map // reflect.Type -> []field

func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldTables.Load(t); ok {
		return fs.([]field)
	}
	fs := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		f := field{index: i}
		tag := sf.Tag.Get("json")
		if tag == "" {
			if !sf.Anonymous {
				f.name = sf.Name
			}
		} else {
			items := strings.Split(tag, ",")
			f.name = items[0]
			if f.name == "" && !sf.Anonymous {
				f.name = sf.Name
			}
			for _, item := range items[1:] {
				switch item {
				case "omitempty":
					f.omitEmpty = true
				case "omitzero":
					f.omitZero = value.OmitZeroFunc(sf.Type)
				}
			}
		}
		if f.name == "-" {
			continue
		}
		fs = append(fs, f)
	}
	fieldTables.Store(t, fs)
	return fs
}

// structInto adds the fields of the struct v to m.
func structInto(m map[string]any, v reflect.Value) error {
	for _, f := range fieldsOf(v.Type()) {
		fv := v.Field(f.index)
		if f.omitEmpty && isEmpty(fv) || f.omitZero != nil && f.omitZero(fv) {
			continue
		}
		if f.name == "" { // inlined
			for fv.Kind() == reflect.Pointer && !fv.IsNil() {
				fv = fv.Elem()
			}
			if fv.Kind() != reflect.Struct || custom(fv.Type()) {
				return errUnhandled
			}
			if err := structInto(m, fv); err != nil {
				return err
			}
			continue
		}
		switch fv.Kind() {
		case reflect.String:
			m[f.name] = fv.String()
		case reflect.Bool:
			m[f.name] = fv.Bool()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			m[f.name] = fv.Int()
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			m[f.name] = fv.Uint() // as apimachinery's: a struct field keeps uint64
		case reflect.Float32, reflect.Float64:
			m[f.name] = fv.Float()
		default:
			x, err := toValue(fv)
			if err != nil {
				return err
			}
			m[f.name] = x
		}
	}
	return nil
}

// toValue converts any value; nil pointers, maps and slices become nil.
func toValue(v reflect.Value) (any, error) {
	if custom(v.Type()) { // json.Marshaler or ToUnstructured(): Quantity, Time, IntOrString, ...
		return value.TypeReflectEntryOf(v.Type()).ToUnstructured(v)
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u := v.Uint()
		if u > math.MaxInt64 {
			return nil, fmt.Errorf("unsigned value %d does not fit into int64 (overflow)", u)
		}
		return int64(u), nil
	case reflect.Float32, reflect.Float64:
		return v.Float(), nil
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
		if v.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("cannot convert map with %v keys", v.Type().Key())
		}
		m := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			x, err := toValue(it.Value())
			if err != nil {
				return nil, err
			}
			m[it.Key().String()] = x
		}
		return m, nil
	case reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			data, err := json.Marshal(v.Bytes()) // base64, as encoding/json writes bytes
			if err != nil {
				return nil, err
			}
			var s string
			err = json.Unmarshal(data, &s)
			return s, err
		}
		s := make([]any, v.Len())
		for i := range s {
			x, err := toValue(v.Index(i))
			if err != nil {
				return nil, err
			}
			s[i] = x
		}
		return s, nil
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return toValue(v.Elem())
	case reflect.Struct:
		m := make(map[string]any, v.NumField())
		err := structInto(m, v)
		return m, err
	default:
		return nil, fmt.Errorf("unrecognized type: %v", v.Kind())
	}
}

var (
	customTypes   sync.Map // reflect.Type -> bool
	marshalerType = reflect.TypeFor[json.Marshaler]()
	converterType = reflect.TypeFor[value.UnstructuredConverter]()
)

// custom says whether values of t convert themselves, as
// value.TypeReflectEntryOf(t).CanConvertToUnstructured does. That cache
// too copies itself for every type it meets first, so it is asked only
// about the few types that do.
func custom(t reflect.Type) bool {
	if c, ok := customTypes.Load(t); ok {
		return c.(bool)
	}
	pt := reflect.PointerTo(t)
	c := t.Implements(marshalerType) || pt.Implements(marshalerType) || t.Implements(converterType) || pt.Implements(converterType)
	customTypes.Store(t, c)
	return c
}

// isEmpty is what omitempty leaves out, as apimachinery's converter has it.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Map, reflect.Slice:
		return v.IsNil() || v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}
