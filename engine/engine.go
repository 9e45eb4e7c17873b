package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/api/validation"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/merge"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/engine/template"
	"github.com/opendatahub-io/odh-serving/engine/tier"
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
	Phase convention.Phase
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
	// MaaSGatewayName and MaaSGatewayNamespace name the Models-as-a-Service
	// gateway (ODH's maas-default-gateway). With Tiers, the managed route
	// of a service whose tiers annotation grants a tier attaches to it too,
	// and one that grants none does not. Default: none; the namespace
	// defaults to the system namespace.
	MaaSGatewayName      string
	MaaSGatewayNamespace string
	// MaaSTokenAudience, MaaSAPIServerURL, MaaSTierReviewSecret and
	// MaaSTierCacheTTL are what the AuthPolicy of a service's MaaS route
	// checks a caller with (build.MaaS): the minted tokens' audience
	// (default convention.MaaSTokenAudience), the cluster's API server as
	// Kuadrant's Authorino reaches it (default
	// convention.MaaSAPIServerURL), the Secret in Authorino's namespace
	// holding its token for the tier lookup (default
	// convention.MaaSTierReviewSecret), and how long, in seconds, Authorino
	// keeps a user's tier (0: not cached; the flag's default is
	// convention.MaaSTierCacheTTL).
	MaaSTokenAudience    string
	MaaSAPIServerURL     string
	MaaSTierReviewSecret string
	MaaSTierCacheTTL     int
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
	CertMode convention.CertMode
	// CertIssuer signs certificates in the cert-manager mode.
	CertIssuer build.CertIssuer
	// OCIModelSource is how oci:// models reach the main container: a
	// modelcar (the default; works on every cluster) or an image volume
	// (needs the ImageVolume feature gate).
	OCIModelSource convention.OCIModelSource
	// Tiers are the Models-as-a-Service tiers. When set, a service with
	// the tiers annotation (tier.AnnotationTiers) gets the RBAC that lets
	// its tiers call it (build.ModelAccess); when nil, MaaS is off and the
	// annotation is ignored. It is data, not a flag: the controller reads
	// it from the tier ConfigMap, render from an input file.
	Tiers *tier.Config
	// GatewayTLS is what tells the gateway to originate TLS to the model
	// servers and the endpoint picker: Istio DestinationRules, Gateway API
	// BackendTLSPolicies, or nothing. Default: nothing. The controller
	// decides it per service from the gateway class and the CRDs served.
	GatewayTLS convention.GatewayTLS
	// IstioShadowService is the Service Istio made for the managed pool;
	// the controller finds it. Empty: no DestinationRule for it.
	IstioShadowService string
	// Monitoring adds the Prometheus Operator monitors of the model
	// servers and the endpoint picker. The controller turns it on when
	// monitoring.coreos.com is served, unless told not to.
	Monitoring bool
	// WithoutKEDA says KEDA's CRDs are not served where the children go:
	// the ScaledObjects that wva.keda and keda ask for are left out, and
	// Result.Autoscalers says so. The controller sets it from its watch of
	// the CRD; render and post-render from --keda=false.
	WithoutKEDA bool
	// Prometheus is the Prometheus a ScaledObject under wva.keda queries
	// for wva_desired_replicas, and how it authenticates.
	Prometheus build.Prometheus
	// KEDAAllowedServerAddresses are the server addresses a service's own
	// KEDA triggers (spec.scaling.keda.triggers) may reach besides
	// Prometheus.URL (validation.TriggerPolicy). Default: none, so only the
	// platform's Prometheus.
	KEDAAllowedServerAddresses []string
	// ConfigMaps finds the ConfigMap that spec.router.scheduler.config.ref
	// names (ResolveSchedulerConfig). It is data, not a flag: the
	// controller reads the cluster, render and post-render their input.
	// Nil: no ConfigMap is known, and a service that names one fails.
	ConfigMaps ConfigMapLookup
	// Auth says the gateways check every request (docs/auth.md): the
	// gateway-wide Kuadrant AuthPolicy, which the chart renders, refuses
	// every request (a default deny), and each route of a service gets an
	// AuthPolicy of its own that lets a caller through only with a token
	// whose identity may get that service, named literally; the managed
	// route drops the Authorization header before the model server. A
	// service annotated convention.AnnotationEnableAuth "false" gets an
	// AuthPolicy on its route that lets anyone in instead. Off: no policy
	// is rendered and the annotation is ignored.
	Auth bool
	// AuthAudiences are the audiences the services' TokenReview accepts
	// tokens for (--auth-audiences; default
	// convention.DefaultAuthAudience).
	AuthAudiences []string
	// PoolRefGroups are the API groups the pool named by
	// spec.router.scheduler.pool.ref exists in; the routes name it in
	// those only (build.RefPool). The controller looks the pool up; empty
	// (render, post-render): one group is assumed, and Result.PoolRef and
	// a warning say which.
	PoolRefGroups []string
	// WithoutNetworkPolicy leaves out the NetworkPolicy each workload
	// otherwise gets (build.Options.NetworkPolicy): only the gateways, the
	// service's endpoint picker, MonitoringNamespaces and the service's own
	// pods may reach its model servers. Off only where something else
	// confines them: with it any pod of the cluster reaches the model
	// servers past the gateway's auth.
	WithoutNetworkPolicy bool
	// MonitoringNamespaces may reach the model servers' ports too
	// (Prometheus's scrapes), through each workload's NetworkPolicy.
	MonitoringNamespaces []string
	// AllowedHostnames are the hostnames a managed route may claim in
	// spec.hostnames: exact names, or "*.example.com" for any name below
	// example.com. Default: none (build.CheckRouteOwner).
	AllowedHostnames []string
}

// TriggerPolicy is what a service's own KEDA triggers may use under
// these options: the addresses of KEDAAllowedServerAddresses and
// Prometheus.URL, and not the platform's authentication for Prometheus.
// The validating webhook applies the same policy as the render.
func (o Options) TriggerPolicy() validation.TriggerPolicy {
	p := validation.TriggerPolicy{PlatformAuth: o.Prometheus.TriggerAuthName, Addresses: slices.Clone(o.KEDAAllowedServerAddresses)}
	if o.Prometheus.URL != "" {
		p.Addresses = append(p.Addresses, o.Prometheus.URL)
	}
	return p
}

func (o Options) withDefaults() Options {
	o = o.Defaults()
	if o.Phase == "" {
		o.Phase = convention.PhaseV1
	}
	return o.resolveImages()
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
	// Namespace and Preset name the preset; both are empty for the service.
	Namespace, Preset string
	// Fields are the fields it set.
	Fields []string
}

// Render renders svc with the presets in catalog: Prepare, then Build
// for opts.Phase.
func Render(ctx context.Context, svc *v1alpha2.LLMInferenceService, catalog *preset.Catalog, opts Options) (*Result, error) {
	p, err := Prepare(ctx, svc, catalog, opts)
	if err != nil {
		return nil, err
	}
	return p.Build("")
}

// Prepare merges svc with the presets in catalog, evaluates the templates
// and names the children.
func Prepare(ctx context.Context, svc *v1alpha2.LLMInferenceService, catalog *preset.Catalog, opts Options) (*Plan, error) {
	p, err := prepare(ctx, svc, catalog, opts.withDefaults())
	if err != nil {
		return nil, fmt.Errorf("render LLMInferenceService %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return p, nil
}

// WithPlatform returns a copy of p that builds with what the controller
// learned from the cluster after Prepare: what tells the gateway to
// originate TLS, Istio's shadow Service of the pool, and the monitors.
func (p *Plan) WithPlatform(tls convention.GatewayTLS, istioShadowService string, monitoring bool) *Plan {
	q := *p
	q.opts.GatewayTLS, q.opts.IstioShadowService, q.opts.Monitoring = tls, istioShadowService, monitoring
	return &q
}

// WithKEDA returns a copy of p that builds for a cluster that does, or does
// not, serve KEDA's ScaledObject CRD, as the controller's watch of it says
// (Options.WithoutKEDA).
func (p *Plan) WithKEDA(served bool) *Plan {
	q := *p
	q.opts.WithoutKEDA = !served
	return &q
}

// WithPoolRefGroups returns a copy of p that builds for a referenced pool
// (spec.router.scheduler.pool.ref) found in these API groups
// (Options.PoolRefGroups).
func (p *Plan) WithPoolRefGroups(groups []string) *Plan {
	q := *p
	q.opts.PoolRefGroups = groups
	return &q
}

// Build builds the children of a prepared service for the migration phase
// (empty: the Options' phase). It does not change p, so one plan can be
// built for several phases.
func (p *Plan) Build(phase convention.Phase) (*Result, error) {
	if phase == "" {
		phase = p.opts.Phase
	}
	opts := p.opts
	bopts := build.Options{
		Phase: phase, StorageInitializerImage: opts.StorageInitializerImage, CertMode: opts.CertMode, CertIssuer: opts.CertIssuer,
		OCIModelSource:  opts.OCIModelSource,
		IngressGateway:  build.GatewayRef{Name: opts.IngressGatewayName, Namespace: opts.IngressGatewayNamespace},
		InternalGateway: build.GatewayRef{Name: opts.InternalGatewayName, Namespace: opts.InternalGatewayNamespace},
		GatewayTLS:      opts.GatewayTLS, IstioShadowService: opts.IstioShadowService, Monitoring: opts.Monitoring,
		WithoutKEDA: opts.WithoutKEDA, Prometheus: opts.Prometheus, PoolRefGroups: opts.PoolRefGroups, Auth: opts.Auth,
		AuthAudiences: opts.AuthAudiences,
		NetworkPolicy: !opts.WithoutNetworkPolicy, MonitoringNamespaces: opts.MonitoringNamespaces,
	}
	if opts.Tiers != nil && opts.MaaSGatewayName != "" && !p.Stopped && len(opts.Tiers.Grant(tier.ReadAnnotation(p.svc.Annotations)).Tiers) > 0 {
		bopts.MaaS = build.MaaS{
			Gateway:       build.GatewayRef{Name: opts.MaaSGatewayName, Namespace: opts.MaaSGatewayNamespace},
			TokenAudience: opts.MaaSTokenAudience, APIServerURL: opts.MaaSAPIServerURL,
			TierReviewSecret: opts.MaaSTierReviewSecret, TierCacheTTL: opts.MaaSTierCacheTTL,
		}
	}
	children, err := build.Children(p.svc, p.Spec, bopts)
	if err != nil {
		return nil, fmt.Errorf("render LLMInferenceService %s/%s: %w", p.svc.Namespace, p.svc.Name, err)
	}
	autoscalers, err := build.Autoscalers(p.svc, p.Spec, bopts)
	if err != nil {
		return nil, fmt.Errorf("render LLMInferenceService %s/%s: %w", p.svc.Namespace, p.svc.Name, err)
	}
	var access build.Access
	if opts.Tiers != nil && !p.Stopped {
		var objs []build.Object
		objs, access = build.ModelAccess(p.svc, opts.Tiers)
		children = append(children, objs...)
	}
	sortObjects(children)
	res := &Result{Plan: *p, Phase: phase, Objects: children, Children: make([]Child, len(children)), Access: access, Autoscalers: autoscalers}
	if !p.Stopped {
		res.PoolRef = build.RefPool(p.Spec, bopts)
	}
	if res.PoolRef != nil && res.PoolRef.Assumed {
		res.Warnings = append(slices.Clip(p.Warnings), res.PoolRef.String())
	}
	for i, o := range children {
		res.Children[i] = Child{Role: roleOf(p.Names, o), Wave: waveOf(o)}
	}
	return res, nil
}

// Shape is svc's spec merged with its baseRefs: what picks the well-known
// presets. Without baseRefs it is svc's own spec, not a copy.
func Shape(svc *v1alpha2.LLMInferenceService, catalog *preset.Catalog) (*v1alpha2.LLMInferenceServiceSpec, error) {
	shape, _, _, err := shapeOf(svc, catalog)
	if err != nil {
		return nil, fmt.Errorf("merge LLMInferenceService %s/%s with its baseRefs: %w", svc.Namespace, svc.Name, err)
	}
	return shape, nil
}

// shapeOf returns the shape, the baseRefs' layers with their explanation,
// and the service's own layer.
func shapeOf(svc *v1alpha2.LLMInferenceService, catalog *preset.Catalog) (*v1alpha2.LLMInferenceServiceSpec, []merge.Layer, []Layer, error) {
	var baseRefs []merge.Layer
	var explained []Layer
	for i, ref := range svc.Spec.BaseRefs {
		p, err := catalog.Lookup(ref.Name, svc.Namespace)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("spec.baseRefs[%d]: %w", i, err)
		}
		layer, err := p.Layer()
		if err != nil {
			return nil, nil, nil, err
		}
		baseRefs = append(baseRefs, layer)
		explained = append(explained, Layer{Name: p.ID(), Why: "baseRef", Namespace: p.Namespace, Preset: p.Name})
	}
	compiled, err := merge.Compile(&svc.Spec)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("spec: %w", err)
	}
	self := merge.Layer{Name: "service", Spec: &svc.Spec, Compiled: compiled}
	shape := &svc.Spec
	if len(baseRefs) > 0 {
		if shape, _, err = merge.Specs(append(slices.Clone(baseRefs), self)); err != nil {
			return nil, nil, nil, err
		}
	}
	return shape, append(baseRefs, self), explained, nil
}

func prepare(ctx context.Context, svc *v1alpha2.LLMInferenceService, catalog *preset.Catalog, opts Options) (*Plan, error) {
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

	// The shape that picks the well-known presets includes the baseRefs.
	shape, own, explained, err := shapeOf(svc, catalog)
	if err != nil {
		return nil, err
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
		wellKnown = append(wellKnown, Layer{Name: p.ID(), Why: "well-known", Namespace: p.Namespace, Preset: p.Name})
	}
	layers = append(layers, own...)
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
	// Before anything that reads the cluster: the webhook stops here too.
	if err := build.CheckRouteOwner(svc.Namespace, svc.Name, spec, opts.AllowedHostnames); err != nil {
		return nil, err
	}
	// After the templates, which could write an address; before
	// anything that reads the cluster, as the route check.
	if errs := validation.ValidateTriggers(spec, opts.TriggerPolicy()); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	// After the templates: a ConfigMap's text is the user's, not a template.
	from, err := resolveSchedulerConfig(spec, svc.Namespace, opts.SystemNamespace, opts.ConfigMaps)
	if err != nil {
		return nil, err
	}
	names, err := build.ChildNames(svc, spec)
	if err != nil {
		return nil, err
	}
	return &Plan{
		Spec: spec, Shape: shape, Names: names, Stopped: build.Stopped(svc),
		Explanation:         Explanation{Layers: explained, Winners: prov.Winner},
		Warnings:            append(validation.Unimplemented(spec), build.KVCacheConflicts(spec)...),
		SchedulerConfigFrom: from,
		svc:                 svc, opts: opts,
	}, nil
}

// kindOrder is the apply order, with the wave of each kind: what others
// refer to comes first. Roles come a wave before the bindings: the RBAC API
// checks that whoever writes a binding holds what its Role grants, and
// refuses the binding while the Role does not exist.
var kindOrder = []struct {
	kind string
	wave int
}{
	{"ServiceAccount", 0}, {"Secret", 0}, {"Role", 0},
	{"RoleBinding", 1}, {"ClusterRoleBinding", 1}, {"Certificate", 1}, {"Service", 1},
	// A workload's pods start behind their NetworkPolicy.
	{"NetworkPolicy", 1},
	{"Deployment", 2}, {"LeaderWorkerSet", 2},
	{"InferencePool", 3}, {"HTTPRoute", 3},
	{"DestinationRule", 3}, {"BackendTLSPolicy", 3}, {"PodMonitor", 3}, {"ServiceMonitor", 3},
	// A route's AuthPolicy: applied with the route. Until it is in force
	// the gateway's default deny covers the route.
	{"AuthPolicy", 3},
	// The actuators come after the workloads they scale.
	{build.KindHPA, 3}, {build.KindScaledObject, 3},
}

func kindIndex(o build.Object) int {
	kind := o.GetObjectKind().GroupVersionKind().Kind
	return slices.IndexFunc(kindOrder, func(k struct {
		kind string
		wave int
	}) bool {
		return k.kind == kind
	})
}

// waveOf is the wave of o's kind; a kind the table lacks goes last.
func waveOf(o build.Object) int {
	if i := kindIndex(o); i >= 0 {
		return kindOrder[i].wave
	}
	return kindOrder[len(kindOrder)-1].wave
}

func sortObjects(objs []build.Object) {
	slices.SortStableFunc(objs, func(a, b build.Object) int {
		ka, kb := a.GetObjectKind().GroupVersionKind(), b.GetObjectKind().GroupVersionKind()
		if d := kindIndex(a) - kindIndex(b); d != 0 {
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
		m, err := manifest.ToUnstructured(c)
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

// RouteErrors merges svc with the presets in catalog and evaluates its
// templates, as Prepare does, and returns why its managed route would
// reach beyond the service (build.CheckRouteOwner): the same errors render
// and the controller refuse the service with. It returns nil when the
// route is confined, and also when the service does not render that far
// (a missing preset, a template error): Prepare reports those, and the
// route is checked again on every render.
func RouteErrors(ctx context.Context, svc *v1alpha2.LLMInferenceService, catalog *preset.Catalog, opts Options) field.ErrorList {
	_, err := prepare(ctx, svc, catalog, opts.withDefaults())
	var re *build.RouteError
	if errors.As(err, &re) {
		return re.Errs
	}
	return nil
}
