package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/api/validation"
	"github.com/opendatahub-io/odh-serving/engine/preset"
)

// Document is one object of a stream and where it starts.
type Document struct {
	File string
	Line int
	// Item is the object's path in the List document it came from, such as
	// "items[2]", or "" for a document of its own.
	Item string
	// JSON is the object as JSON.
	JSON   []byte
	Object *unstructured.Unstructured
}

// Where is "file:line", and the item for an object of a List.
func (d *Document) Where() string {
	if d.Item != "" {
		return fmt.Sprintf("%s:%d: %s", d.File, d.Line, d.Item)
	}
	return fmt.Sprintf("%s:%d", d.File, d.Line)
}

// Split reads a multi-document YAML (or JSON) stream into its objects, in
// stream order. Documents are cut as splitDocuments says; empty ones and
// "null" ones are skipped, as kubectl does; a document of a kind ending in
// List with an items array (a v1 List, as kubectl and Helm write them)
// stands for its items. Any other document that is not an object with
// apiVersion and kind is an error. The documents are decoded on every
// core; the first error in stream order is returned.
func Split(file string, data []byte) ([]Document, error) {
	chunks, err := splitDocuments(file, data)
	if err != nil {
		return nil, err
	}
	decoded := make([][]Document, len(chunks))
	errs := make([]error, len(chunks))
	parallel(len(chunks), func(i int) {
		c := chunks[i]
		js, err := yaml.YAMLToJSONStrict(c.text)
		if err != nil {
			errs[i] = fmt.Errorf("%s:%d: %w", file, c.line, err)
			return
		}
		if bytes.Equal(js, []byte("null")) {
			return
		}
		if err := oneDocument(c.text); err != nil {
			errs[i] = fmt.Errorf("%s:%d: %w", file, c.line, err)
			return
		}
		decoded[i], errs[i] = objects(&Document{File: file, Line: c.line, JSON: js})
	})
	var docs []Document
	for i, err := range errs {
		if err != nil {
			return nil, err
		}
		docs = append(docs, decoded[i]...)
	}
	return docs, nil
}

// objects decodes d.JSON and returns the object, or a List's items, each
// with its path.
func objects(d *Document) ([]Document, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(d.JSON); err != nil {
		return nil, fmt.Errorf("%s: %w", d.Where(), err)
	}
	items, isList := u.Object["items"].([]any)
	if !isList || !strings.HasSuffix(u.GetKind(), "List") {
		d.Object = u
		return []Document{*d}, nil
	}
	var out []Document
	for i, item := range items {
		js, err := json.Marshal(item)
		if err != nil {
			return nil, fmt.Errorf("%s: items[%d]: %w", d.Where(), i, err)
		}
		path := fmt.Sprintf("items[%d]", i)
		if d.Item != "" {
			path = d.Item + "." + path
		}
		inner, err := objects(&Document{File: d.File, Line: d.Line, Item: path, JSON: js})
		if err != nil {
			return nil, err
		}
		out = append(out, inner...)
	}
	return out, nil
}

// Inputs are the objects of a stream, sorted by what odh-serving does with
// them.
type Inputs struct {
	// Docs are all documents, in stream order.
	Docs     []Document
	Services []*Service
	Presets  []*preset.Preset
	// Other objects pass through untouched.
	Other []Document
}

// Service is a decoded service and where it came from.
type Service struct {
	Where   string
	Service *v1alpha2.LLMInferenceService
}

// Decode reads a stream and decodes the services and presets in it,
// strictly and in either served version.
func Decode(file string, data []byte) (*Inputs, error) {
	docs, err := Split(file, data)
	if err != nil {
		return nil, err
	}
	in := &Inputs{Docs: docs}
	var errs []error
	first := map[string]string{}
	for _, d := range docs {
		gvk := d.Object.GroupVersionKind()
		if err := once(first, &d); err != nil {
			errs = append(errs, err)
			continue
		}
		if gvk.Group != v1alpha2.GroupVersion.Group {
			in.Other = append(in.Other, d)
			continue
		}
		switch gvk.Kind {
		case "LLMInferenceService":
			svc, err := decodeService(&d)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			in.Services = append(in.Services, &Service{Where: d.Where(), Service: svc})
		case "LLMInferenceServiceConfig":
			p, err := decodePreset(&d)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			in.Presets = append(in.Presets, p)
		default:
			in.Other = append(in.Other, d)
		}
	}
	return in, errors.Join(errs...)
}

// once records where an object is and fails when the stream held it
// before, in this or another version: post-render would write its children
// twice. Presets are left to the catalog, which names both places; objects
// without a name (generateName) cannot repeat.
func once(first map[string]string, d *Document) error {
	gvk := d.Object.GroupVersionKind()
	if d.Object.GetName() == "" || (gvk.Group == v1alpha2.GroupVersion.Group && gvk.Kind == "LLMInferenceServiceConfig") {
		return nil
	}
	key := gvk.Group + "/" + gvk.Kind + " " + qualified(d.Object)
	if prev, dup := first[key]; dup {
		return fmt.Errorf("%s: %s %s is also at %s; a stream may hold each object once", d.Where(), gvk.Kind, qualified(d.Object), prev)
	}
	first[key] = d.Where()
	return nil
}

// DecodeFile reads the file at path and decodes it as Decode does.
func DecodeFile(path string) (*Inputs, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, data)
}

// DecodePresets reads a stream that holds only presets.
func DecodePresets(file string, data []byte) ([]*preset.Preset, error) {
	in, err := Decode(file, data)
	if err != nil {
		return nil, err
	}
	for _, o := range in.Other {
		return nil, fmt.Errorf("%s: %s %s is not an LLMInferenceServiceConfig", o.Where(), o.Object.GetKind(), o.Object.GetName())
	}
	if len(in.Services) > 0 {
		return nil, fmt.Errorf("%s: an LLMInferenceService is not a preset", in.Services[0].Where)
	}
	return in.Presets, nil
}

// gvVersion is the version of a serving.kserve.io apiVersion, or the whole
// apiVersion when it is of another group, so the error names it.
func gvVersion(apiVersion string) string {
	if v, ok := strings.CutPrefix(apiVersion, v1alpha2.GroupVersion.Group+"/"); ok {
		return v
	}
	return apiVersion
}

func decodeService(d *Document) (*v1alpha2.LLMInferenceService, error) {
	svc, errs := validation.DecodeServiceObject(gvVersion(d.Object.GetAPIVersion()), d.JSON, d.Object.Object)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: LLMInferenceService %s: %w", d.Where(), qualified(d.Object), errs.ToAggregate())
	}
	return svc, nil
}

func decodePreset(d *Document) (*preset.Preset, error) {
	where := fmt.Sprintf("%s: LLMInferenceServiceConfig %s", d.Where(), qualified(d.Object))
	cfg, errs := validation.DecodeConfigObject(gvVersion(d.Object.GetAPIVersion()), d.JSON, d.Object.Object)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", where, errs.ToAggregate())
	}
	if cfg.Name == "" {
		return nil, fmt.Errorf("%s: metadata.name: Required value", where)
	}
	if errs := validation.ValidateConfig(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", where, errs.ToAggregate())
	}
	return &preset.Preset{Name: cfg.Name, Namespace: cfg.Namespace, File: d.Where(), Spec: &cfg.Spec}, nil
}

func qualified(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// WriteYAML writes objects as a YAML stream, one document each, in the
// bytes go.yaml.in/yaml/v2 writes: keys sorted, as sigs.k8s.io/yaml does
// through it, but without the detour through JSON. The documents are
// encoded on every core, in order.
func WriteYAML(w io.Writer, objs []*unstructured.Unstructured) error {
	docs, err := encodeAll(objs)
	if err != nil {
		return err
	}
	for i, out := range docs {
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes objects as one indented v1 List.
func WriteJSON(w io.Writer, objs []*unstructured.Unstructured) error {
	items := make([]map[string]any, len(objs))
	for i, o := range objs {
		items[i] = o.Object
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}
