package validation

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// DecodeStrict decodes the JSON of an object into obj. It reports every
// unknown field, duplicate field and badly typed value with its field path.
// The CRDs store pod specs and the route spec without a schema, so this is
// where their typos are caught.
func DecodeStrict(data []byte, obj any) field.ErrorList {
	strictErrs, err := kjson.UnmarshalStrict(data, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	var errs field.ErrorList
	for _, e := range strictErrs {
		errs = append(errs, strictError(e))
	}
	if err != nil {
		errs = append(errs, locate(data, reflect.TypeOf(obj), nil, err))
	}
	return errs
}

func strictError(err error) *field.Error {
	var fe kjson.FieldError
	if !errors.As(err, &fe) {
		return field.InternalError(nil, err)
	}
	path := parsePath(fe.FieldPath())
	if strings.HasPrefix(err.Error(), "duplicate field") {
		return field.Duplicate(path, nil).WithOrigin("json")
	}
	return field.Forbidden(path, "unknown field")
}

// locate finds the deepest part of data that fails to decode into t and
// reports the failure at that part's path. The decoder's own error names no
// JSON path for values such as quantities, and only a partial one for type
// mismatches, so locate walks the document instead.
func locate(data []byte, t reflect.Type, path *field.Path, err error) *field.Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) == nil {
			for _, key := range slices.Sorted(maps.Keys(obj)) {
				ft, ok := jsonField(t, key)
				if !ok {
					continue
				}
				if childErr := decodeErr(obj[key], ft); childErr != nil {
					return locate(obj[key], ft, childPath(path, key), childErr)
				}
			}
		}
	case reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(data, &items) == nil {
			for i, item := range items {
				if childErr := decodeErr(item, t.Elem()); childErr != nil {
					return locate(item, t.Elem(), indexPath(path, i), childErr)
				}
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) == nil {
			for _, key := range slices.Sorted(maps.Keys(obj)) {
				if childErr := decodeErr(obj[key], t.Elem()); childErr != nil {
					return locate(obj[key], t.Elem(), keyPath(path, key), childErr)
				}
			}
		}
	}
	return field.Invalid(rootIfNil(path), abbreviate(data), describe(err))
}

func decodeErr(data []byte, t reflect.Type) error {
	_, err := kjson.UnmarshalStrict(data, reflect.New(t).Interface())
	return err
}

// jsonField finds the type of the struct field that JSON key names,
// looking through inlined embedded structs.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				if ft, ok := jsonField(inner, key); ok {
					return ft, true
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, true
		}
	}
	return nil, false
}

var typeErrRE = regexp.MustCompile(`cannot unmarshal (\S+) into Go (?:struct field \S+|value) of type (\S+)`)

func describe(err error) string {
	msg := err.Error()
	if m := typeErrRE.FindStringSubmatch(msg); m != nil {
		return "must be of type " + m[2] + ", not " + m[1]
	}
	return strings.TrimPrefix(msg, "json: ")
}

func abbreviate(data []byte) string {
	const limit = 80
	s := string(data)
	var str string
	if json.Unmarshal(data, &str) == nil {
		s = str
	}
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}

// parsePath turns "spec.template.containers[0].imagee" into a field.Path.
func parsePath(s string) *field.Path {
	var p *field.Path
	for part := range strings.SplitSeq(s, ".") {
		name, rest, _ := strings.Cut(part, "[")
		p = childPath(p, name)
		for rest != "" {
			var idx string
			idx, rest, _ = strings.Cut(rest, "]")
			rest = strings.TrimPrefix(rest, "[")
			p = p.Key(idx)
		}
	}
	return p
}

func childPath(p *field.Path, name string) *field.Path {
	if p == nil {
		return field.NewPath(name)
	}
	return p.Child(name)
}

func indexPath(p *field.Path, i int) *field.Path { return rootIfNil(p).Index(i) }

func keyPath(p *field.Path, k string) *field.Path { return rootIfNil(p).Key(k) }

func rootIfNil(p *field.Path) *field.Path {
	if p == nil {
		return field.NewPath("<root>")
	}
	return p
}
