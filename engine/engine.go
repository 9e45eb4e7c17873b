package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/api/validation"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/merge"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/engine/template"
)

// DefaultSystemNamespace is where the shared presets live when no other
// namespace is given.
const DefaultSystemNamespace = "opendatahub"

// Options configure a render. The zero value works.
type Options struct {
	// SystemNamespace holds the shared presets. Default: opendatahub.
	SystemNamespace string
	// PresetPrefix is put before the well-known preset names.
	// Default: "kserve-", KServe's.
	PresetPrefix *string
	// Phase is the InferencePool migration phase. Default: v1.
	Phase build.Phase
	// IngressGatewayName and IngressGatewayNamespace name the gateway a
	// managed route attaches to. Default: kserve-ingress-gateway in the
	// system namespace.
	IngressGatewayName      string
	IngressGatewayNamespace string
	// InternalGatewayName and InternalGatewayNamespace name a gateway for
	// in-cluster callers. When set, a managed route whose parents come from
	// presets attaches to it too. Default: none; the namespace defaults to
	// the system namespace.
	InternalGatewayName      string
	InternalGatewayNamespace string
	// StorageInitializerImage downloads hf:// and s3:// models. Default:
	// Images["storageInitializer"], else KServe's storage-initializer.
	StorageInitializerImage string
	// ImageRegistry, when set, replaces the registry of every image in
	// Images and of the storage initializer (see MirrorImage): one value
	// for clusters that pull through a mirror.
	ImageRegistry string
	// Images are the container images presets name by key
	// ({{ .GlobalConfig.Images.vllm }}); the built-in ones are in
	// presets/images.yaml.
	Images map[string]string
	// CertMode is where serving certificates come from. Default: self-signed
	// (by the controller).
	CertMode build.CertMode
	// CertIssuer signs certificates in the cert-manager mode.
	CertIssuer build.CertIssuer
}

func (o Options) withDefaults() Options {
	if o.SystemNamespace == "" {
		o.SystemNamespace = DefaultSystemNamespace
	}
	if o.PresetPrefix == nil {
		p := preset.DefaultPrefix
		o.PresetPrefix = &p
	}
	if o.Phase == "" {
		o.Phase = build.PhaseV1
	}
	if o.IngressGatewayName == "" {
		o.IngressGatewayName = "kserve-ingress-gateway"
	}
	if o.IngressGatewayNamespace == "" {
		o.IngressGatewayNamespace = o.SystemNamespace
	}
	if o.InternalGatewayName != "" && o.InternalGatewayNamespace == "" {
		o.InternalGatewayNamespace = o.SystemNamespace
	}
	return o.resolveImages()
}

// Result is a rendered service.
type Result struct {
	// Objects are the children as typed objects, in apply order: RBAC,
	// Services, workloads, pools, route; by name within a kind. They can be
	// server-side applied as they are; Unstructured gives them as maps for
	// writing out.
	Objects []build.Object
	// Explanation says how the spec was put together.
	Explanation Explanation
}

// Explanation says which presets applied, in which order, which fields
// each set, and which one won each field.
type Explanation struct {
	Layers []Layer
	// Winners maps each field of the merged spec to the layer that set it.
	Winners map[string]string
}

// Layer is one step of the merge.
type Layer struct {
	// Name is the preset's namespace/name, or "service".
	Name string
	// Why says why it applied: well-known, baseRef or service.
	Why string
	// Fields are the fields it set.
	Fields []string
}

// Render renders svc with the presets in catalog.
func Render(ctx context.Context, svc *v1alpha2.LLMInferenceService, catalog *preset.Catalog, opts Options) (*Result, error) {
	res, err := render(ctx, svc, catalog, opts.withDefaults())
	if err != nil {
		return nil, fmt.Errorf("render LLMInferenceService %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return res, nil
}

func render(ctx context.Context, svc *v1alpha2.LLMInferenceService, catalog *preset.Catalog, opts Options) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if svc.Namespace == "" {
		return nil, errors.New("metadata.namespace: the service has no namespace")
	}
	if msgs := utilvalidation.IsDNS1123Label(svc.Name); len(msgs) > 0 {
		return nil, fmt.Errorf("metadata.name %q: %s (the name becomes a label value and DNS names of the children)", svc.Name, strings.Join(msgs, "; "))
	}
	if errs := validation.ValidateService(svc); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}

	var baseRefs []merge.Layer
	var explained []Layer
	for i, ref := range svc.Spec.BaseRefs {
		p, err := catalog.Lookup(ref.Name, svc.Namespace)
		if err != nil {
			return nil, fmt.Errorf("spec.baseRefs[%d]: %w", i, err)
		}
		layer, err := p.Layer()
		if err != nil {
			return nil, err
		}
		baseRefs = append(baseRefs, layer)
		explained = append(explained, Layer{Name: p.ID(), Why: "baseRef"})
	}
	compiled, err := merge.Compile(&svc.Spec)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	self := merge.Layer{Name: "service", Spec: &svc.Spec, Compiled: compiled}

	// The shape that picks the well-known presets includes the baseRefs.
	shape := &svc.Spec
	if len(baseRefs) > 0 {
		if shape, _, err = merge.Specs(append(slices.Clone(baseRefs), self)); err != nil {
			return nil, err
		}
	}
	var layers []merge.Layer
	var wellKnown []Layer
	for _, name := range preset.WellKnown(shape, *opts.PresetPrefix) {
		p, err := catalog.Lookup(name, svc.Namespace)
		if err != nil {
			return nil, fmt.Errorf("well-known preset for this service's shape: %w", err)
		}
		layer, err := p.Layer()
		if err != nil {
			return nil, err
		}
		layers = append(layers, layer)
		wellKnown = append(wellKnown, Layer{Name: p.ID(), Why: "well-known"})
	}
	layers = append(append(layers, baseRefs...), self)
	explained = append(append(wellKnown, explained...), Layer{Name: "service", Why: "service"})

	spec, prov, err := merge.Specs(layers)
	if err != nil {
		return nil, err
	}
	for i := range explained {
		explained[i].Fields = prov.Set[i].Fields
	}
	if spec.Model.Name == nil {
		name := svc.Name
		spec.Model.Name = &name
	}
	if errs := validation.ValidateMergedSpec(spec); len(errs) > 0 {
		return nil, fmt.Errorf("the spec merged from presets, baseRefs and the service is invalid: %w", errs.ToAggregate())
	}
	data := &template.Data{
		ObjectMeta: *svc.ObjectMeta.DeepCopy(),
		Spec:       *spec.DeepCopy(),
		GlobalConfig: template.GlobalConfig{
			SystemNamespace:         opts.SystemNamespace,
			IngressGatewayName:      opts.IngressGatewayName,
			IngressGatewayNamespace: opts.IngressGatewayNamespace,
			Images:                  opts.Images,
		},
	}
	if err := template.Evaluate(spec, data, prov.Origin); err != nil {
		return nil, err
	}
	children, err := build.Children(svc, spec, build.Options{
		Phase: opts.Phase, StorageInitializerImage: opts.StorageInitializerImage, CertMode: opts.CertMode, CertIssuer: opts.CertIssuer,
		IngressGateway:  build.GatewayRef{Name: opts.IngressGatewayName, Namespace: opts.IngressGatewayNamespace},
		InternalGateway: build.GatewayRef{Name: opts.InternalGatewayName, Namespace: opts.InternalGatewayNamespace},
	})
	if err != nil {
		return nil, err
	}
	sortObjects(children)
	return &Result{Objects: children, Explanation: Explanation{Layers: explained, Winners: prov.Winner}}, nil
}

// kindOrder is the apply order: what others refer to comes first.
var kindOrder = []string{
	"ServiceAccount", "Role", "RoleBinding", "ClusterRoleBinding", "Certificate", "Service",
	"Deployment", "LeaderWorkerSet", "InferencePool", "HTTPRoute",
}

func sortObjects(objs []build.Object) {
	slices.SortStableFunc(objs, func(a, b build.Object) int {
		ka, kb := a.GetObjectKind().GroupVersionKind(), b.GetObjectKind().GroupVersionKind()
		if d := slices.Index(kindOrder, ka.Kind) - slices.Index(kindOrder, kb.Kind); d != 0 {
			return d
		}
		if d := strings.Compare(ka.GroupVersion().String(), kb.GroupVersion().String()); d != 0 {
			return d // inference.networking.k8s.io/v1 before x-k8s.io/v1alpha2
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
}

// Unstructured returns the objects as maps, in the same order, without the
// empty status and null timestamps typed objects carry.
func (r *Result) Unstructured() ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(r.Objects))
	for _, c := range r.Objects {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
		if err != nil {
			return nil, fmt.Errorf("convert %s %s: %w", c.GetObjectKind().GroupVersionKind().Kind, c.GetName(), err)
		}
		delete(m, "status")
		dropNullTimestamps(m)
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

// dropNullTimestamps removes the "creationTimestamp: null" that typed
// objects carry into every metadata, pod templates included.
func dropNullTimestamps(v any) {
	switch t := v.(type) {
	case map[string]any:
		if ts, ok := t["creationTimestamp"]; ok && ts == nil {
			delete(t, "creationTimestamp")
		}
		for _, e := range t {
			dropNullTimestamps(e)
		}
	case []any:
		for _, e := range t {
			dropNullTimestamps(e)
		}
	}
}
