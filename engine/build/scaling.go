package build

import (
	"encoding/json"
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/api/validation"
)

// The actuators' kinds, and what llm-d's workload-variant autoscaler (WVA)
// looks for on them.
const (
	KindHPA          = "HorizontalPodAutoscaler"
	KindScaledObject = "ScaledObject"
	// APIVersionKEDA is KEDA's ScaledObject API. It is optional: the
	// ScaledObjects are rendered only when it is served (Options.WithoutKEDA).
	APIVersionKEDA = "keda.sh/v1alpha1"

	// WVA finds its actuators by these annotations and this label.
	AnnotationWVAManaged     = "llm-d.ai/managed"
	AnnotationWVAModelID     = "llm-d.ai/model-id"
	AnnotationWVAVariantCost = "llm-d.ai/variant-cost"
	LabelAcceleratorName     = "inference.optimization/acceleratorName"

	// WVAMetric is the replica count WVA publishes per variant; a variant
	// is named after its actuator.
	WVAMetric = "wva_desired_replicas"
	// WVATrigger names the ScaledObject trigger on WVAMetric.
	WVATrigger = "wva-desired-replicas"
)

// Prometheus is where a ScaledObject under wva.keda reads WVAMetric, and
// how it authenticates: KEDA's prometheus scaler settings.
type Prometheus struct {
	// URL is the Prometheus (or Thanos querier) address.
	URL string
	// AuthModes is the scaler's authModes: bearer, basic, tls, ... A CA
	// bundle, token or client certificate comes from the
	// TriggerAuthentication that TriggerAuthName names.
	AuthModes string
	// TriggerAuthName and TriggerAuthKind name that TriggerAuthentication
	// or ClusterTriggerAuthentication.
	TriggerAuthName string
	TriggerAuthKind string
	// UnsafeSSL skips verifying Prometheus's certificate. Off unless set.
	UnsafeSSL bool
}

// Autoscaler is the actuator of one scaled workload.
type Autoscaler struct {
	// Prefill is true for the prefill workload's actuator.
	Prefill bool
	// Kind is HorizontalPodAutoscaler or ScaledObject; Name its name.
	Kind, Name string
	// Target is the workload it scales: a Deployment, or the
	// LeaderWorkerSet when the workload has a worker.
	Target autoscalingv2.CrossVersionObjectReference
	// Withheld, when set, says why the actuator was not rendered: its API
	// is not served.
	Withheld string
}

// Autoscalers lists the actuators the spec asks for, whether or not they
// can be rendered. A stopped service has none.
func Autoscalers(svc *v1alpha2.LLMInferenceService, spec *v1alpha2.LLMInferenceServiceSpec, opts Options) ([]Autoscaler, error) {
	if Stopped(svc) {
		return nil, nil
	}
	n, err := newNames(svc, spec)
	if err != nil {
		return nil, err
	}
	return autoscalers(spec, n, opts), nil
}

func autoscalers(spec *v1alpha2.LLMInferenceServiceSpec, n names, opts Options) []Autoscaler {
	var out []Autoscaler
	one := func(w *v1alpha2.WorkloadSpec, prefill bool, deployment, lws, hpa, so string) {
		if !w.Scaled() {
			return
		}
		a := Autoscaler{Prefill: prefill, Kind: KindHPA, Name: hpa,
			Target: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment}}
		if w.Worker != nil {
			a.Target = autoscalingv2.CrossVersionObjectReference{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: lws}
		}
		if s := w.Scaling; s.KEDA != nil || (s.WVA != nil && s.WVA.KEDA != nil) {
			a.Kind, a.Name = KindScaledObject, so
			if opts.WithoutKEDA {
				a.Withheld = fmt.Sprintf("KEDA's %s is not served in this cluster", APIVersionKEDA)
			}
		}
		out = append(out, a)
	}
	one(&spec.WorkloadSpec, false, n.deployment, n.lws, n.hpa, n.scaledObject)
	if spec.Prefill != nil {
		one(spec.Prefill, true, n.prefillDeployment, n.prefillLWS, n.prefillHPA, n.prefillScaledObject)
	}
	return out
}

// autoscale builds the actuator of each scaled workload.
func (b *builder) autoscale() error {
	for _, a := range autoscalers(b.spec, b.names, b.opts) {
		w, path, component := &b.spec.WorkloadSpec, "spec.scaling", ComponentWorkload
		if a.Prefill {
			w, path, component = b.spec.Prefill, "spec.prefill.scaling", ComponentWorkloadPrefill
		}
		if a.Withheld != "" {
			continue
		}
		meta := b.meta(a.Name, component)
		s := w.Scaling
		if s.WVA != nil {
			b.wvaMetadata(&meta, w)
		}
		var err error
		if a.Kind == KindHPA {
			b.add(b.hpa(meta, a.Target, s))
		} else if err = b.scaledObject(meta, a.Target, s, path); err != nil {
			return err
		}
	}
	return nil
}

// wvaMetadata adds what WVA discovers an actuator by: the managed
// annotation, the model, the variant's cost and its accelerator.
func (b *builder) wvaMetadata(m *metav1.ObjectMeta, w *v1alpha2.WorkloadSpec) {
	cost := w.Scaling.WVA.VariantCost
	if cost == "" {
		cost = validation.DefaultVariantCost
	}
	model := b.svc.Name
	if b.spec.Model.Name != nil {
		model = *b.spec.Model.Name
	}
	m.Annotations = map[string]string{AnnotationWVAManaged: "true", AnnotationWVAModelID: model, AnnotationWVAVariantCost: cost}
	m.Labels[LabelAcceleratorName] = b.accelerator(w)
}

// accelerator is the inference.optimization/acceleratorName label of the
// workload's labels (where KServe reads it) or of the service, else the
// vendor of the GPUs the serving pod asks for: nvidia, amd, or cpu when it
// asks for none.
func (b *builder) accelerator(w *v1alpha2.WorkloadSpec) string {
	if v := w.Labels[LabelAcceleratorName]; v != "" {
		return v
	}
	if v := b.svc.Labels[LabelAcceleratorName]; v != "" {
		return v
	}
	pod := w.Template
	if pod == nil {
		pod = w.Worker
	}
	for _, c := range pod.Containers {
		for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for name := range list {
				switch {
				case strings.HasPrefix(string(name), "nvidia.com/"):
					return "nvidia"
				case strings.HasPrefix(string(name), "amd.com/"):
					return "amd"
				}
			}
		}
	}
	return "cpu"
}

func minReplicas(s *v1alpha2.ScalingSpec) *int32 {
	n := validation.DefaultMinReplicas
	if s.MinReplicas != nil {
		n = *s.MinReplicas
	}
	return &n
}

// hpa is the HorizontalPodAutoscaler of wva.hpa: it reads the replica count
// WVA publishes for this variant (named after the HPA) from the external
// metrics API. An AverageValue target of 1 makes the HPA's count the
// metric's value.
func (b *builder) hpa(meta metav1.ObjectMeta, target autoscalingv2.CrossVersionObjectReference, s *v1alpha2.ScalingSpec) *autoscalingv2.HorizontalPodAutoscaler {
	one := resource.MustParse("1")
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: KindHPA},
		ObjectMeta: meta,
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: target,
			MinReplicas:    minReplicas(s),
			MaxReplicas:    s.MaxReplicas,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ExternalMetricSourceType,
				External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{
						Name:     WVAMetric,
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"variant_name": meta.Name}},
					},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &one},
				},
			}},
			Behavior: s.WVA.HPA.Behavior.DeepCopy(),
		},
	}
}

// scaledObjectSpec is the part of KEDA's ScaledObject spec odh-serving sets,
// in its JSON shape.
type scaledObjectSpec struct {
	ScaleTargetRef  scaleTarget            `json:"scaleTargetRef"`
	MinReplicaCount *int32                 `json:"minReplicaCount"`
	MaxReplicaCount int32                  `json:"maxReplicaCount"`
	Triggers        []v1alpha2.KEDATrigger `json:"triggers"`
	// The service's own KEDA options keep their names in the ScaledObject
	// (the embedded fields are promoted to this level in JSON).
	v1alpha2.KEDAScalingSpec
}

type scaleTarget struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// scaledObject is the KEDA ScaledObject of wva.keda (one prometheus trigger
// on the replica count WVA publishes for this variant) or of keda (the
// user's triggers).
func (b *builder) scaledObject(meta metav1.ObjectMeta, target autoscalingv2.CrossVersionObjectReference, s *v1alpha2.ScalingSpec, path string) error {
	spec := scaledObjectSpec{
		ScaleTargetRef:  scaleTarget{APIVersion: target.APIVersion, Kind: target.Kind, Name: target.Name},
		MinReplicaCount: minReplicas(s),
		MaxReplicaCount: s.MaxReplicas,
	}
	var keda *v1alpha2.KEDAScalingSpec
	if s.KEDA != nil {
		keda = &s.KEDA.KEDAScalingSpec
		spec.Triggers = s.KEDA.Triggers
	} else {
		keda = s.WVA.KEDA
		trigger, err := b.wvaTrigger(meta.Name, path)
		if err != nil {
			return err
		}
		spec.Triggers = []v1alpha2.KEDATrigger{trigger}
	}
	if keda != nil {
		spec.KEDAScalingSpec = *keda
	}
	data, err := json.Marshal(map[string]any{"apiVersion": APIVersionKEDA, "kind": KindScaledObject, "metadata": meta, "spec": spec})
	if err != nil {
		return fmt.Errorf("%s: encode ScaledObject %s: %w", path, meta.Name, err)
	}
	so := &unstructured.Unstructured{}
	if err := so.UnmarshalJSON(data); err != nil {
		return fmt.Errorf("%s: decode ScaledObject %s: %w", path, meta.Name, err)
	}
	b.add(so)
	return nil
}

// wvaTrigger queries Prometheus for the replica count WVA publishes for the
// variant. Prometheus keeps WVA's namespace label as exported_namespace.
func (b *builder) wvaTrigger(variant, path string) (v1alpha2.KEDATrigger, error) {
	p := b.opts.Prometheus
	if p.URL == "" {
		return v1alpha2.KEDATrigger{}, fmt.Errorf("%s.wva.keda: the ScaledObject queries Prometheus for %s, and no Prometheus address is configured "+
			"(--prometheus-url; in the chart, autoscaling.prometheus.url)", path, WVAMetric)
	}
	t := v1alpha2.KEDATrigger{
		Type: "prometheus", Name: WVATrigger, MetricType: autoscalingv2.AverageValueMetricType,
		Metadata: map[string]string{
			"serverAddress": p.URL,
			"query":         fmt.Sprintf("%s{variant_name=%q,exported_namespace=%q}", WVAMetric, variant, b.svc.Namespace),
			"threshold":     "1",
			"unsafeSsl":     fmt.Sprint(p.UnsafeSSL),
		},
	}
	if p.AuthModes != "" {
		t.Metadata["authModes"] = p.AuthModes
	}
	if p.TriggerAuthName != "" {
		t.AuthenticationRef = &v1alpha2.KEDAAuthenticationRef{Name: p.TriggerAuthName, Kind: p.TriggerAuthKind}
	}
	return t, nil
}
