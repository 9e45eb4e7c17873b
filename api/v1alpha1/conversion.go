package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// Annotations that carry what one version has and the other lacks.
const (
	// AnnotationCriticality holds v1alpha1 spec.model.criticality on the
	// stored v1alpha2 object.
	AnnotationCriticality = "serving.kserve.io/criticality"
	// AnnotationConversionCriticality holds, on the stored v1alpha2 object,
	// the criticality of v1alpha1's other model specs: the LoRA adapters
	// (spec.model.lora.adapters[i], also nested) and the speculator's model.
	// Its value is a JSON object from the model's path below spec, dotted
	// with list indexes ("model.lora.adapters.0", "speculator.model"), to
	// the criticality.
	AnnotationConversionCriticality = "serving.kserve.io/conversion-criticality"
	// AnnotationConversionPoolSpec holds, on a v1alpha1 object, a v1alpha2
	// pool spec that the v1alpha1 shape cannot express.
	AnnotationConversionPoolSpec = "serving.kserve.io/conversion-pool-spec"
)

var (
	_ conversion.Convertible = &LLMInferenceService{}
	_ conversion.Convertible = &LLMInferenceServiceConfig{}
)

// ConvertTo converts this service to the v1alpha2 hub.
func (in *LLMInferenceService) ConvertTo(hub conversion.Hub) error {
	return convertTyped(in, hub, ToHub)
}

// ConvertFrom converts the v1alpha2 hub to this version.
func (in *LLMInferenceService) ConvertFrom(hub conversion.Hub) error {
	return convertTyped(hub, in, FromHub)
}

// ConvertTo converts this preset to the v1alpha2 hub.
func (in *LLMInferenceServiceConfig) ConvertTo(hub conversion.Hub) error {
	return convertTyped(in, hub, ToHub)
}

// ConvertFrom converts the v1alpha2 hub to this version.
func (in *LLMInferenceServiceConfig) ConvertFrom(hub conversion.Hub) error {
	return convertTyped(hub, in, FromHub)
}

// convertTyped runs a JSON-level conversion between typed objects, so that
// the typed methods and the conversion webhook share one implementation.
func convertTyped(src, dst runtime.Object, convert func(map[string]any) error) error {
	data, err := json.Marshal(src)
	if err != nil {
		return fmt.Errorf("encode %T: %w", src, err)
	}
	obj, err := DecodeObject(data)
	if err != nil {
		return err
	}
	if err := convert(obj); err != nil {
		return err
	}
	data, err = json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode converted object: %w", err)
	}
	reflect.ValueOf(dst).Elem().SetZero()
	if err := json.Unmarshal(data, dst); err != nil {
		return fmt.Errorf("decode converted object into %T: %w", dst, err)
	}
	return nil
}

// DecodeObject decodes a JSON object keeping numbers exact.
func DecodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	return obj, nil
}

// ToHub converts a v1alpha1 object, decoded from JSON, to v1alpha2 in place.
// Only what differs between the versions is touched; every other field,
// including the partial pod specs, passes through as it was written.
func ToHub(obj map[string]any) error {
	obj["apiVersion"] = v1alpha2.GroupVersion.String()
	model := child(obj, "spec", "model")
	if crit, ok := model["criticality"]; ok {
		delete(model, "criticality")
		if len(model) == 0 {
			delete(child(obj, "spec"), "model")
		}
		if s, ok := crit.(string); ok {
			setAnnotation(obj, AnnotationCriticality, s)
		}
	}
	if err := stashCriticality(obj); err != nil {
		return err
	}
	stash, hasStash := annotations(obj)[AnnotationConversionPoolSpec].(string)
	removeAnnotation(obj, AnnotationConversionPoolSpec)

	pool := child(obj, "spec", "router", "scheduler", "pool")
	spec, ok := pool["spec"].(map[string]any)
	if !ok {
		return nil
	}
	written := clone(spec)
	pool["spec"] = poolSpecToHub(spec)
	if !hasStash {
		return nil
	}
	stashed, err := DecodeObject([]byte(stash))
	if err != nil {
		return fmt.Errorf("%s %s: annotation %s: %w", kindOf(obj), nameOf(obj), AnnotationConversionPoolSpec, err)
	}
	// The stash is only the truth while the v1alpha1 pool spec is still what
	// the stash converts to; an edit through v1alpha1 wins.
	if reflect.DeepEqual(poolSpecFromHub(clone(stashed)), written) {
		pool["spec"] = stashed
	}
	return nil
}

// FromHub converts a v1alpha2 object, decoded from JSON, to v1alpha1 in
// place, stashing a pool spec the v1alpha1 shape cannot hold.
func FromHub(obj map[string]any) error {
	obj["apiVersion"] = GroupVersion.String()
	removeAnnotation(obj, AnnotationConversionPoolSpec)
	if crit, ok := annotations(obj)[AnnotationCriticality].(string); ok {
		removeAnnotation(obj, AnnotationCriticality)
		spec := ensureChild(obj, "spec")
		model := ensureChild(spec, "model")
		model["criticality"] = crit
	}
	restoreCriticality(obj)
	pool := child(obj, "spec", "router", "scheduler", "pool")
	spec, ok := pool["spec"].(map[string]any)
	if !ok {
		return nil
	}
	converted := poolSpecFromHub(clone(spec))
	pool["spec"] = converted
	if !reflect.DeepEqual(poolSpecToHub(clone(converted)), spec) {
		data, err := json.Marshal(spec)
		if err != nil {
			return fmt.Errorf("%s %s: stash spec.router.scheduler.pool.spec: %w", kindOf(obj), nameOf(obj), err)
		}
		setAnnotation(obj, AnnotationConversionPoolSpec, string(data))
	}
	return nil
}

// stashCriticality moves the criticality of the adapters and of the
// speculator's model, which v1alpha2 lacks, into
// AnnotationConversionCriticality. An object without any keeps the
// annotation it has.
func stashCriticality(obj map[string]any) error {
	found := map[string]any{}
	spec := child(obj, "spec")
	takeAdapterCriticality(child(spec, "model"), "model", found)
	if model := child(spec, "speculator", "model"); model != nil {
		if crit, ok := model["criticality"]; ok {
			delete(model, "criticality")
			found["speculator.model"] = crit
		}
		takeAdapterCriticality(model, "speculator.model", found)
	}
	if len(found) == 0 {
		return nil
	}
	data, err := json.Marshal(found)
	if err != nil {
		return fmt.Errorf("%s %s: stash the criticality of adapters and speculator: %w", kindOf(obj), nameOf(obj), err)
	}
	setAnnotation(obj, AnnotationConversionCriticality, string(data))
	return nil
}

// takeAdapterCriticality removes the criticality of each adapter of model,
// nested adapters too, into found under the adapter's path.
func takeAdapterCriticality(model map[string]any, path string, found map[string]any) {
	adapters, _ := child(model, "lora")["adapters"].([]any)
	for i, a := range adapters {
		adapter, ok := a.(map[string]any)
		if !ok {
			continue
		}
		p := fmt.Sprintf("%s.lora.adapters.%d", path, i)
		if crit, ok := adapter["criticality"]; ok {
			delete(adapter, "criticality")
			found[p] = crit
		}
		takeAdapterCriticality(adapter, p, found)
	}
}

// restoreCriticality puts the criticality stashed by stashCriticality back
// on the models whose paths still exist, and drops the annotation. An
// annotation that is no JSON object of strings stays as it is (the
// webhook refuses such a one).
func restoreCriticality(obj map[string]any) {
	raw, ok := annotations(obj)[AnnotationConversionCriticality].(string)
	if !ok {
		return
	}
	var stash map[string]string
	if json.Unmarshal([]byte(raw), &stash) != nil {
		return
	}
	removeAnnotation(obj, AnnotationConversionCriticality)
	spec := child(obj, "spec")
	for path, crit := range stash {
		if model := walkPath(spec, strings.Split(path, ".")); model != nil {
			model["criticality"] = crit
		}
	}
}

// walkPath follows keys and list indexes from v and returns the map it
// ends at, or nil.
func walkPath(v any, steps []string) map[string]any {
	for _, step := range steps {
		switch t := v.(type) {
		case map[string]any:
			v = t[step]
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	m, _ := v.(map[string]any)
	return m
}

// poolSpecToHub turns a GIE v1alpha2 pool spec into the GIE v1 shape:
// selector -> selector.matchLabels, targetPortNumber -> targetPorts[0].number,
// extensionRef{portNumber} -> endpointPickerRef{port.number}. Unknown keys
// pass through.
func poolSpecToHub(spec map[string]any) map[string]any {
	if sel, ok := spec["selector"]; ok {
		spec["selector"] = map[string]any{"matchLabels": sel}
	}
	if port, ok := spec["targetPortNumber"]; ok {
		delete(spec, "targetPortNumber")
		spec["targetPorts"] = []any{map[string]any{"number": port}}
	}
	if ref, ok := spec["extensionRef"].(map[string]any); ok {
		delete(spec, "extensionRef")
		if port, ok := ref["portNumber"]; ok {
			delete(ref, "portNumber")
			ref["port"] = map[string]any{"number": port}
		}
		spec["endpointPickerRef"] = ref
	}
	return spec
}

// poolSpecFromHub is the inverse of poolSpecToHub. It keeps the first target
// port only; FromHub stashes what it drops.
func poolSpecFromHub(spec map[string]any) map[string]any {
	if sel, ok := spec["selector"].(map[string]any); ok {
		if labels, ok := sel["matchLabels"]; ok {
			spec["selector"] = labels
		} else {
			delete(spec, "selector")
		}
	}
	if ports, ok := spec["targetPorts"].([]any); ok {
		delete(spec, "targetPorts")
		if len(ports) > 0 {
			if first, ok := ports[0].(map[string]any); ok {
				if n, ok := first["number"]; ok {
					spec["targetPortNumber"] = n
				}
			}
		}
	}
	if ref, ok := spec["endpointPickerRef"].(map[string]any); ok {
		delete(spec, "endpointPickerRef")
		if port, ok := ref["port"].(map[string]any); ok {
			delete(ref, "port")
			if n, ok := port["number"]; ok {
				ref["portNumber"] = n
			}
		}
		spec["extensionRef"] = ref
	}
	return spec
}

// child walks maps along keys and returns the last one, or nil (which reads
// as an empty map) when any step is missing.
func child(obj map[string]any, keys ...string) map[string]any {
	cur := obj
	for _, k := range keys {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

func ensureChild(obj map[string]any, key string) map[string]any {
	next, ok := obj[key].(map[string]any)
	if !ok {
		next = map[string]any{}
		obj[key] = next
	}
	return next
}

func annotations(obj map[string]any) map[string]any {
	return child(obj, "metadata", "annotations")
}

func setAnnotation(obj map[string]any, key, value string) {
	ensureChild(ensureChild(obj, "metadata"), "annotations")[key] = value
}

// removeAnnotation deletes key, and drops the annotations when none are left
// so that an object written without annotations stays without them.
func removeAnnotation(obj map[string]any, key string) {
	anns := annotations(obj)
	if _, ok := anns[key]; !ok {
		return
	}
	delete(anns, key)
	if len(anns) == 0 {
		delete(child(obj, "metadata"), "annotations")
	}
}

func kindOf(obj map[string]any) string {
	k, _ := obj["kind"].(string)
	return k
}

func nameOf(obj map[string]any) string {
	meta := child(obj, "metadata")
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// clone deep-copies a decoded JSON value.
func clone[T any](v T) T {
	return runtime.DeepCopyJSONValue(v).(T)
}
