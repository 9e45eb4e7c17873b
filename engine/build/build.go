package build

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/naming"
)

// Object is a child: a typed Kubernetes object with metadata.
type Object interface {
	runtime.Object
	metav1.Object
}

// Options shape the children.
type Options struct {
	// Phase is the InferencePool migration phase; the controller decides it.
	Phase convention.Phase
	// StorageInitializerImage downloads hf:// and s3:// models.
	StorageInitializerImage string
	// CertMode says where the serving certificates come from.
	CertMode convention.CertMode
	// OCIModelSource is how oci:// models reach main. Default: modelcar.
	OCIModelSource convention.OCIModelSource
	// CertIssuer signs the certificates in the cert-manager mode.
	// Default: the ClusterIssuer odh-serving-ca.
	CertIssuer CertIssuer
	// IngressGateway is the gateway managed routes attach to by default.
	IngressGateway GatewayRef
	// InternalGateway, when named, is a gateway for in-cluster callers: a
	// managed route attached to IngressGateway attaches to it too.
	InternalGateway GatewayRef
	// MaaS, when its Gateway is named, publishes the service on the
	// Models-as-a-Service gateway: a route of its own there, with the
	// managed route's rules, and the AuthPolicy that checks MaaS callers
	// against this service (maasRoute). The engine names the gateway only
	// for a service whose tiers annotation grants a tier.
	MaaS MaaS
	// GatewayTLS is what tells the gateway to originate TLS to the
	// backends: Istio DestinationRules, Gateway API BackendTLSPolicies, or
	// nothing (empty or none).
	GatewayTLS convention.GatewayTLS
	// IstioShadowService is the Service Istio made for the managed pool
	// (labelled istio.io/inferencepool-name); the controller finds it.
	// Empty: none yet, and no DestinationRule for it.
	IstioShadowService string
	// Monitoring adds the Prometheus Operator monitors of the model
	// servers and the endpoint picker, and what the endpoint picker's
	// monitor needs to authenticate.
	Monitoring bool
	// WithoutKEDA says KEDA's ScaledObject API is not served: the
	// ScaledObjects a scaling spec asks for are left out (Autoscalers says
	// which).
	WithoutKEDA bool
	// Prometheus is what a ScaledObject under wva.keda queries.
	Prometheus Prometheus
	// Auth says the gateways check every request: each route of the
	// service gets an AuthPolicy that authorizes against the service (an
	// anonymous one for a service annotated
	// convention.AnnotationEnableAuth "false"), and the managed route drops
	// the caller's Authorization header before the model server.
	Auth bool
	// AuthAudiences are the audiences a protected service's TokenReview
	// accepts tokens for.
	AuthAudiences []string
	// PoolRefGroups are the API groups (GroupPoolV1, GroupPoolV1alpha2)
	// the pool named by spec.router.scheduler.pool.ref exists in, as the
	// controller found it. Empty: not known (offline), or found in none;
	// the route then names the pool in one assumed group (see RefPool).
	PoolRefGroups []string
	// NetworkPolicy adds a NetworkPolicy per workload that lets only the
	// gateways, the endpoint picker, the monitoring namespaces and the
	// service's own pods reach the model servers (networkPolicy).
	NetworkPolicy bool
	// MonitoringNamespaces may reach the model servers' ports too, for
	// Prometheus's scrapes.
	MonitoringNamespaces []string
}

// MaaS is the Models-as-a-Service gateway and what its AuthPolicies need
// to check a caller: the MaaS token's audience, and the tier lookup
// (tierreviews through the cluster's API server, with the gateway policy
// engine's own token).
type MaaS struct {
	// Gateway is the MaaS gateway; empty: the service is not published.
	Gateway GatewayRef
	// TokenAudience is the audience of the minted MaaS tokens, which the
	// TokenReview asks for.
	TokenAudience string
	// APIServerURL is the cluster's API server as the policy engine
	// (Authorino) reaches it, for the tierreviews call.
	APIServerURL string
	// TierReviewSecret is the Secret, in the policy engine's namespace,
	// whose key "token" is the policy engine's bearer token for that call.
	TierReviewSecret string
	// TierCacheTTL is how long, in seconds, the policy engine keeps a
	// user's tier; 0: not cached.
	TierCacheTTL int
}

// GatewayRef names a Gateway.
type GatewayRef struct {
	Name      string
	Namespace string
}

// CertIssuer names a cert-manager Issuer or ClusterIssuer.
type CertIssuer struct {
	Kind string
	Name string
}

const (
	// AnnotationServingCert asks OpenShift's service CA for a certificate.
	AnnotationServingCert = "service.beta.openshift.io/serving-cert-secret-name"
	// TLSVolume is the pod volume the presets mount the certificate from.
	TLSVolume = "tls-certs"

	// GroupPoolV1 is the API group of the v1 InferencePool.
	GroupPoolV1 = "inference.networking.k8s.io"
	// GroupPoolV1alpha2 is the API group of the v1alpha2 InferencePool.
	GroupPoolV1alpha2 = "inference.networking.x-k8s.io"
)

// Stopped reports whether svc carries the stop annotation: it keeps its
// spec and has no children.
func Stopped(svc *v1alpha2.LLMInferenceService) bool {
	return strings.EqualFold(svc.Annotations[convention.AnnotationStop], "true")
}

// Children builds the children of svc from its merged and evaluated spec.
// A stopped service has none.
func Children(svc *v1alpha2.LLMInferenceService, spec *v1alpha2.LLMInferenceServiceSpec, opts Options) ([]Object, error) {
	if Stopped(svc) {
		return nil, nil
	}
	if opts.Phase == "" {
		opts.Phase = convention.PhaseV1
	}
	n, err := newNames(svc, spec)
	if err != nil {
		return nil, err
	}
	lora, err := loraAdapters(spec)
	if err != nil {
		return nil, err
	}
	b := &builder{svc: svc, spec: spec, opts: opts, names: n, lora: lora}
	if err := b.workloads(); err != nil {
		return nil, err
	}
	if err := b.scheduler(); err != nil {
		return nil, err
	}
	if err := b.route(); err != nil {
		return nil, err
	}
	if err := b.serviceAuth(); err != nil {
		return nil, err
	}
	b.gatewayTLS()
	b.monitors()
	if err := b.autoscale(); err != nil {
		return nil, err
	}
	return b.out, nil
}

type builder struct {
	svc   *v1alpha2.LLMInferenceService
	spec  *v1alpha2.LLMInferenceServiceSpec
	opts  Options
	names names
	lora  []loraAdapter // spec.model.lora.adapters, checked and sorted
	out   []Object
}

func (b *builder) add(objs ...Object) { b.out = append(b.out, objs...) }

// meta is the metadata of a child with the given name and component.
func (b *builder) meta(name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.svc.Namespace, Labels: b.labels(component)}
}

func (b *builder) labels(component string) map[string]string {
	return map[string]string{convention.LabelPartOf: convention.PartOf, convention.LabelName: b.svc.Name, convention.LabelComponent: component}
}

// Names are the names of the children that others look up by name: the
// controller reads them, and decides the migration phase from the route
// and the pool before anything is built. They do not depend on the phase.
type Names struct {
	// Deployment and PrefillDeployment are the main and prefill
	// Deployments; LeaderWorkerSet and PrefillLeaderWorkerSet the multi-node
	// ones. Which are built depends on the spec.
	Deployment, PrefillDeployment           string
	LeaderWorkerSet, PrefillLeaderWorkerSet string
	// WorkloadService is the Service in front of the main workload.
	WorkloadService string
	// Scheduler is the endpoint picker's Deployment, SchedulerService its
	// Service (or the one spec.router.scheduler.pool.spec.endpointPickerRef
	// names).
	Scheduler, SchedulerService string
	// Pool is the InferencePool the route sends traffic to: the managed
	// one, or the one spec.router.scheduler.pool.ref names.
	Pool string
	// Route is the managed HTTPRoute.
	Route string
	// MaaSRoute is the route of a service published to Models-as-a-Service
	// on the MaaS gateway, and MaaSRouteAuth its AuthPolicy.
	MaaSRoute, MaaSRouteAuth string
	// TLSSecret is the self-signed serving certificate's secret that the
	// presets mount and the controller writes.
	TLSSecret string
	// HPA and PrefillHPA are the HorizontalPodAutoscalers of wva.hpa;
	// ScaledObject and PrefillScaledObject the KEDA ScaledObjects of
	// wva.keda and keda. Which are built depends on the spec.
	HPA, PrefillHPA                   string
	ScaledObject, PrefillScaledObject string
}

// ChildNames derives the names of svc's children from its merged and
// evaluated spec.
func ChildNames(svc *v1alpha2.LLMInferenceService, spec *v1alpha2.LLMInferenceServiceSpec) (Names, error) {
	n, err := newNames(svc, spec)
	if err != nil {
		return Names{}, err
	}
	return Names{
		Deployment: n.deployment, PrefillDeployment: n.prefillDeployment,
		LeaderWorkerSet: n.lws, PrefillLeaderWorkerSet: n.prefillLWS,
		WorkloadService: n.workloadService, Scheduler: n.epp, SchedulerService: n.eppService,
		Pool: n.pool, Route: n.route, TLSSecret: n.tlsSecret, MaaSRoute: n.maasRoute, MaaSRouteAuth: n.maasRouteAuth,
		HPA: n.hpa, PrefillHPA: n.prefillHPA, ScaledObject: n.scaledObject, PrefillScaledObject: n.prefillScaledObject,
	}, nil
}

// names are the children's names, derived once.
type names struct {
	workloadService, pool, route, tlsSecret                     string
	deployment, prefillDeployment, lws, prefillLWS              string
	workloadSA, workloadRole, workloadRoleBinding               string
	multiNodeRole, multiNodeRoleBinding, prefillSA, prefillMNSA string
	epp, eppService, eppSA, eppRole, eppRoleBinding, eppAuth    string
	eppTLSSecret                                                string
	workloadCert, eppCert                                       string
	eppTLS, shadowTLS                                           string
	engineMonitor, eppMonitor, metricsReader, metricsReaderAuth string
	hpa, prefillHPA, scaledObject, prefillScaledObject          string
	routeAuth, maasRoute, maasRouteAuth                         string
}

func newNames(svc *v1alpha2.LLMInferenceService, spec *v1alpha2.LLMInferenceServiceSpec) (names, error) {
	var n names
	var errs []string
	child := func(dst *string, suffix string) {
		v, err := naming.ChildName(svc.Name, suffix)
		if err != nil {
			errs = append(errs, err.Error())
		}
		*dst = v
	}
	safe := func(dst *string, suffix string) {
		v, err := naming.SafeChildName(svc.Name, suffix)
		if err != nil {
			errs = append(errs, err.Error())
		}
		*dst = v
	}
	child(&n.workloadService, "-kserve-workload-svc")
	child(&n.pool, "-inference-pool")
	child(&n.route, "-kserve-route")
	child(&n.routeAuth, convention.RouteAuthPolicySuffix)
	child(&n.maasRoute, MaaSRouteSuffix)
	child(&n.maasRouteAuth, MaaSRouteSuffix+RouteRefAuthPolicySuffix)
	child(&n.tlsSecret, "-kserve-self-signed-certs")
	safe(&n.deployment, "-kserve")
	safe(&n.prefillDeployment, "-kserve-prefill")
	safe(&n.lws, "-kserve-mn")
	safe(&n.prefillLWS, "-kserve-mn-prefill")
	safe(&n.workloadSA, "-kserve")
	safe(&n.workloadRole, "-kserve-role")
	safe(&n.workloadRoleBinding, "-kserve-rb")
	safe(&n.multiNodeRole, "-kserve-mn-role")
	safe(&n.multiNodeRoleBinding, "-kserve-mn-rb")
	safe(&n.prefillSA, "-kserve-prefill")
	safe(&n.prefillMNSA, "-kserve-mn-prefill")
	child(&n.epp, "-kserve-router-scheduler")
	child(&n.eppService, "-epp-service")
	child(&n.eppSA, "-epp-sa")
	child(&n.eppRole, "-epp-role")
	child(&n.eppRoleBinding, "-epp-rb")
	child(&n.eppTLSSecret, "-epp-serving-cert")
	child(&n.workloadCert, "-kserve-workload-cert")
	child(&n.eppCert, "-epp-cert")
	child(&n.eppTLS, "-kserve-scheduler")
	child(&n.shadowTLS, "-kserve-shadow-svc")
	child(&n.engineMonitor, "-kserve-llmisvc-engine")
	child(&n.eppMonitor, "-kserve-llmisvc-scheduler")
	child(&n.metricsReader, "-kserve-metrics-reader")
	child(&n.hpa, "-kserve-hpa")
	child(&n.prefillHPA, "-kserve-prefill-hpa")
	child(&n.scaledObject, "-kserve-keda")
	child(&n.prefillScaledObject, "-kserve-prefill-keda")
	if cluster, err := ClusterNames(svc.Namespace, svc.Name); err != nil {
		errs = append(errs, err.Error())
	} else {
		n.eppAuth, n.metricsReaderAuth = cluster[0], cluster[1]
	}
	if r := spec.Router; r != nil && r.Scheduler != nil && r.Scheduler.Pool != nil {
		if ref := r.Scheduler.Pool.Ref; ref != nil && ref.Name != "" {
			n.pool = ref.Name
		}
		if s := r.Scheduler.Pool.Spec; s != nil && s.EndpointPickerRef != nil && s.EndpointPickerRef.Name != "" {
			n.eppService = s.EndpointPickerRef.Name
		}
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("name the children of %s/%s: %s", svc.Namespace, svc.Name, strings.Join(errs, "; "))
	}
	return n, nil
}

func childOf(parent, suffix string) (string, error) { return naming.ChildName(parent, suffix) }

// The suffixes of the cluster-scoped children's names.
const (
	suffixEPPAuth           = "-epp-auth-rb"
	suffixMetricsReaderAuth = "-kserve-metrics-reader"
)

// ClusterNames are the names of the cluster-scoped children a service in
// namespace may have, whatever its spec: the endpoint picker's binding to
// system:auth-delegator, then the metrics reader's binding
// (naming.ClusterChildName). The controller removes a binding of the
// service's under any other name, such as one named by an earlier version.
func ClusterNames(namespace, name string) ([]string, error) {
	var out []string
	for _, suffix := range []string{suffixEPPAuth, suffixMetricsReaderAuth} {
		v, err := naming.ClusterChildName(namespace, name, suffix)
		if err != nil {
			return nil, fmt.Errorf("name the cluster-scoped children of %s/%s: %w", namespace, name, err)
		}
		out = append(out, v)
	}
	return out, nil
}
