package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// Annotations that carry what one version has and the other lacks.
const (
	// AnnotationCriticality holds v1alpha1 spec.model.criticality on the
	// stored v1alpha2 object.
	AnnotationCriticality = "serving.kserve.io/criticality"
	// AnnotationConversionPoolSpec holds, on a v1alpha1 object, a v1alpha2
	// pool spec that the v1alpha1 shape cannot express.
	AnnotationConversionPoolSpec = "serving.kserve.io/conversion-pool-spec"
)

var (
	_ conversion.Convertible = &LLMInferenceService{}
	_ conversion.Convertible = &LLMInferenceServiceConfig{}
)

// ConvertTo converts this service to the v1alpha2 hub.
func (src *LLMInferenceService) ConvertTo(hub conversion.Hub) error {
	dst, ok := hub.(*v1alpha2.LLMInferenceService)
	if !ok {
		return fmt.Errorf("convert LLMInferenceService %s/%s to v1alpha2: unexpected hub type %T", src.Namespace, src.Name, hub)
	}
	dst.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "LLMInferenceService"}
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	if err := specToHub(&src.Spec, &dst.Spec, &dst.ObjectMeta); err != nil {
		return fmt.Errorf("convert LLMInferenceService %s/%s to v1alpha2: %w", src.Namespace, src.Name, err)
	}
	dst.Status = *src.Status.DeepCopy()
	return nil
}

// ConvertFrom converts the v1alpha2 hub to this version.
func (dst *LLMInferenceService) ConvertFrom(hub conversion.Hub) error {
	src, ok := hub.(*v1alpha2.LLMInferenceService)
	if !ok {
		return fmt.Errorf("convert LLMInferenceService to v1alpha1: unexpected hub type %T", hub)
	}
	dst.TypeMeta = metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "LLMInferenceService"}
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	if err := specFromHub(&src.Spec, &dst.Spec, &dst.ObjectMeta); err != nil {
		return fmt.Errorf("convert LLMInferenceService %s/%s to v1alpha1: %w", src.Namespace, src.Name, err)
	}
	dst.Status = *src.Status.DeepCopy()
	return nil
}

// ConvertTo converts this preset to the v1alpha2 hub.
func (src *LLMInferenceServiceConfig) ConvertTo(hub conversion.Hub) error {
	dst, ok := hub.(*v1alpha2.LLMInferenceServiceConfig)
	if !ok {
		return fmt.Errorf("convert LLMInferenceServiceConfig %s/%s to v1alpha2: unexpected hub type %T", src.Namespace, src.Name, hub)
	}
	dst.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "LLMInferenceServiceConfig"}
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	if err := specToHub(&src.Spec, &dst.Spec, &dst.ObjectMeta); err != nil {
		return fmt.Errorf("convert LLMInferenceServiceConfig %s/%s to v1alpha2: %w", src.Namespace, src.Name, err)
	}
	return nil
}

// ConvertFrom converts the v1alpha2 hub to this version.
func (dst *LLMInferenceServiceConfig) ConvertFrom(hub conversion.Hub) error {
	src, ok := hub.(*v1alpha2.LLMInferenceServiceConfig)
	if !ok {
		return fmt.Errorf("convert LLMInferenceServiceConfig to v1alpha1: unexpected hub type %T", hub)
	}
	dst.TypeMeta = metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "LLMInferenceServiceConfig"}
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	if err := specFromHub(&src.Spec, &dst.Spec, &dst.ObjectMeta); err != nil {
		return fmt.Errorf("convert LLMInferenceServiceConfig %s/%s to v1alpha1: %w", src.Namespace, src.Name, err)
	}
	return nil
}

// specToHub converts a spec to v1alpha2. meta is the v1alpha2 object's
// metadata, which receives the criticality annotation and loses the
// conversion stash.
func specToHub(src *LLMInferenceServiceSpec, dst *v1alpha2.LLMInferenceServiceSpec, meta *metav1.ObjectMeta) error {
	dst.Model = v1alpha2.LLMModelSpec{
		URI:  src.Model.URI,
		Name: copyPtr(src.Model.Name),
		LoRA: src.Model.LoRA.DeepCopy(),
	}
	if src.Model.Criticality != nil {
		setAnnotation(meta, AnnotationCriticality, string(*src.Model.Criticality))
	}
	src.WorkloadSpec.DeepCopyInto(&dst.WorkloadSpec)
	dst.Prefill = src.Prefill.DeepCopy()
	dst.BaseRefs = copySlice(src.BaseRefs)

	stash, hasStash := meta.Annotations[AnnotationConversionPoolSpec]
	removeAnnotation(meta, AnnotationConversionPoolSpec)
	if src.Router == nil {
		dst.Router = nil
		return nil
	}
	dst.Router = &v1alpha2.RouterSpec{
		Route:   src.Router.Route.DeepCopy(),
		Gateway: src.Router.Gateway.DeepCopy(),
		Ingress: src.Router.Ingress.DeepCopy(),
	}
	s := src.Router.Scheduler
	if s == nil {
		return nil
	}
	dst.Router.Scheduler = &v1alpha2.SchedulerSpec{Template: s.Template.DeepCopy()}
	if s.Pool == nil {
		return nil
	}
	pool := &v1alpha2.InferencePoolSpec{Ref: s.Pool.Ref.DeepCopy(), Spec: poolSpecToHub(s.Pool.Spec)}
	if hasStash {
		restored, err := restorePoolSpec(stash, s.Pool.Spec)
		if err != nil {
			return err
		}
		if restored != nil {
			pool.Spec = restored
		}
	}
	dst.Router.Scheduler.Pool = pool
	return nil
}

// specFromHub converts a v1alpha2 spec to v1alpha1. meta is the v1alpha1
// object's metadata: the criticality annotation moves into the spec, and a
// pool spec v1alpha1 cannot express is stashed.
func specFromHub(src *v1alpha2.LLMInferenceServiceSpec, dst *LLMInferenceServiceSpec, meta *metav1.ObjectMeta) error {
	dst.Model = LLMModelSpec{
		URI:  src.Model.URI,
		Name: copyPtr(src.Model.Name),
		LoRA: src.Model.LoRA.DeepCopy(),
	}
	if c, ok := meta.Annotations[AnnotationCriticality]; ok {
		crit := Criticality(c)
		dst.Model.Criticality = &crit
		removeAnnotation(meta, AnnotationCriticality)
	}
	src.WorkloadSpec.DeepCopyInto(&dst.WorkloadSpec)
	dst.Prefill = src.Prefill.DeepCopy()
	dst.BaseRefs = copySlice(src.BaseRefs)

	removeAnnotation(meta, AnnotationConversionPoolSpec)
	if src.Router == nil {
		dst.Router = nil
		return nil
	}
	dst.Router = &RouterSpec{
		Route:   src.Router.Route.DeepCopy(),
		Gateway: src.Router.Gateway.DeepCopy(),
		Ingress: src.Router.Ingress.DeepCopy(),
	}
	s := src.Router.Scheduler
	if s == nil {
		return nil
	}
	dst.Router.Scheduler = &SchedulerSpec{Template: s.Template.DeepCopy()}
	if s.Pool == nil {
		return nil
	}
	dst.Router.Scheduler.Pool = &InferencePoolSpec{Ref: s.Pool.Ref.DeepCopy(), Spec: poolSpecFromHub(s.Pool.Spec)}
	lossless, err := sameJSON(poolSpecToHub(dst.Router.Scheduler.Pool.Spec), s.Pool.Spec)
	if err != nil {
		return err
	}
	if !lossless {
		raw, err := json.Marshal(s.Pool.Spec)
		if err != nil {
			return fmt.Errorf("stash spec.router.scheduler.pool.spec: %w", err)
		}
		setAnnotation(meta, AnnotationConversionPoolSpec, string(raw))
	}
	return nil
}

// restorePoolSpec returns the stashed v1alpha2 pool spec if the v1alpha1 pool
// spec is still what the stash converts to, and nil if it was edited since.
func restorePoolSpec(stash string, current *GIEInferencePoolSpec) (*v1alpha2.PoolSpec, error) {
	var stashed v1alpha2.PoolSpec
	if err := json.Unmarshal([]byte(stash), &stashed); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationConversionPoolSpec, err)
	}
	unchanged, err := sameJSON(poolSpecFromHub(&stashed), current)
	if err != nil || !unchanged {
		return nil, err
	}
	return &stashed, nil
}

func poolSpecToHub(src *GIEInferencePoolSpec) *v1alpha2.PoolSpec {
	if src == nil {
		return nil
	}
	dst := &v1alpha2.PoolSpec{}
	// An empty v1alpha1 selector does not survive JSON (omitempty), so it
	// maps to no selector rather than to an empty one.
	if len(src.Selector) > 0 {
		dst.Selector = &v1alpha2.PoolSelector{MatchLabels: copyMap(src.Selector)}
	}
	if src.TargetPortNumber != nil {
		dst.TargetPorts = []v1alpha2.PoolPort{{Number: *src.TargetPortNumber}}
	}
	if e := src.ExtensionRef; e != nil {
		dst.EndpointPickerRef = &v1alpha2.EndpointPickerRef{
			Group:       copyPtr(e.Group),
			Kind:        copyPtr(e.Kind),
			Name:        e.Name,
			FailureMode: copyPtr(e.FailureMode),
		}
		if e.PortNumber != nil {
			dst.EndpointPickerRef.Port = &v1alpha2.PoolPort{Number: *e.PortNumber}
		}
	}
	return dst
}

// poolSpecFromHub keeps the first target port only; specFromHub stashes the
// rest.
func poolSpecFromHub(src *v1alpha2.PoolSpec) *GIEInferencePoolSpec {
	if src == nil {
		return nil
	}
	dst := &GIEInferencePoolSpec{}
	if src.Selector != nil {
		dst.Selector = copyMap(src.Selector.MatchLabels)
	}
	if len(src.TargetPorts) > 0 {
		n := src.TargetPorts[0].Number
		dst.TargetPortNumber = &n
	}
	if r := src.EndpointPickerRef; r != nil {
		dst.ExtensionRef = &Extension{
			Group:       copyPtr(r.Group),
			Kind:        copyPtr(r.Kind),
			Name:        r.Name,
			FailureMode: copyPtr(r.FailureMode),
		}
		if r.Port != nil {
			n := r.Port.Number
			dst.ExtensionRef.PortNumber = &n
		}
	}
	return dst
}

func sameJSON(a, b any) (bool, error) {
	ja, err := json.Marshal(a)
	if err != nil {
		return false, fmt.Errorf("compare pool specs: %w", err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false, fmt.Errorf("compare pool specs: %w", err)
	}
	return bytes.Equal(ja, jb), nil
}

func setAnnotation(meta *metav1.ObjectMeta, key, value string) {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = value
}

// removeAnnotation deletes key, and drops the map when it becomes empty so
// that an object without annotations stays without them.
func removeAnnotation(meta *metav1.ObjectMeta, key string) {
	if _, ok := meta.Annotations[key]; !ok {
		return
	}
	delete(meta.Annotations, key)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copySlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

func copyMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
