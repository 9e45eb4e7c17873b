package convention

import (
	"fmt"
	"slices"
	"strings"
)

// Field managers of server-side apply.
const (
	// FieldManager applies services' children, the CRDs, status and the
	// secrets odh-serving writes.
	FieldManager = "odh-serving"
	// MigrationFieldManager owns the HTTPRoutes' backendRef weights and the
	// migration annotation, which the controller moves through the
	// InferencePool migration (in static mode too, where Helm owns the rest).
	MigrationFieldManager = "odh-serving-migration"
)

// The managed-by label marks the CRDs and secrets odh-serving writes.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "odh-serving"
)

// Labels, annotations and values that name a child's place.
const (
	LabelPartOf          = "app.kubernetes.io/part-of"
	LabelName            = "app.kubernetes.io/name"
	LabelComponent       = "app.kubernetes.io/component"
	LabelKServeComponent = "kserve.io/component"
	LabelRole            = "llm-d.ai/role"

	// PartOf is the value of LabelPartOf on every child.
	PartOf = "llminferenceservice"

	// AnnotationStop stops a service: it keeps its spec and has no children.
	AnnotationStop = "serving.kserve.io/stop"
	// AnnotationMigrated marks a route that moved to the v1 pool for good.
	AnnotationMigrated = "serving.kserve.io/inference-pool-migrated"
	// AnnotationWeightsManagedBy marks the HTTPRoutes that static mode
	// renders: their backendRef weights (and AnnotationMigrated) belong to
	// the controller, which patches them as MigrationFieldManager. GitOps
	// tools ignore exactly those fields (docs/gitops.md).
	AnnotationWeightsManagedBy = "odh-serving.opendatahub.io/weights-managed-by"
	// LabelMinReplicas marks the workloads static mode renders without
	// spec.replicas because an autoscaler scales them, with the
	// autoscaler's minimum. The replicas webhook keeps such a workload's
	// count off every write but its scale subresource (docs/controller.md,
	// "Replicas in static mode"). A label, so that the webhook's
	// objectSelector sends it only these workloads.
	LabelMinReplicas = "odh-serving.opendatahub.io/min-replicas"
	// AnnotationEnableAuth "false" opens one service to anonymous callers
	// while auth is on (ODH's annotation; any other value, or none, keeps
	// it protected). See docs/auth.md.
	AnnotationEnableAuth = "security.opendatahub.io/enable-auth"
)

// Kuadrant, which enforces auth at the gateways (docs/auth.md).
const (
	// KuadrantGroup is the API group of Kuadrant's policies.
	KuadrantGroup = "kuadrant.io"
	// AuthPolicyCRD serves AuthPolicy, kuadrant.io/v1.
	AuthPolicyCRD = "authpolicies.kuadrant.io"
	// KuadrantPolicyController is the controllerName of the route parent
	// status Kuadrant writes on the routes its policies reach.
	KuadrantPolicyController = "kuadrant.io/policy-controller"
	// ConditionAuthPolicyAffected is True in that status when an
	// AuthPolicy (the gateway's or the route's own) enforces on the route.
	ConditionAuthPolicyAffected = "kuadrant.io/AuthPolicyAffected"
	// ConditionPolicyAccepted and ConditionPolicyEnforced are the
	// conditions Kuadrant's policy controller writes in an AuthPolicy's
	// status.conditions (with status.observedGeneration): Accepted (reason
	// Accepted; False: TargetNotFound, Invalid, Conflicted, Unknown), then,
	// only once Accepted, Enforced (reason Enforced; False: Overridden,
	// Unknown, MissingDependency, MissingResource, InvalidCelExpression).
	ConditionPolicyAccepted = "Accepted"
	ConditionPolicyEnforced = "Enforced"
	// ReasonPolicyOverridden is Enforced False because every rule of the
	// policy is replaced, on every route in its path, by another policy's
	// (a gateway's defaults under routes' own policies).
	ReasonPolicyOverridden = "Overridden"
	// RouteAuthPolicySuffix names the AuthPolicy of a service's managed
	// route (auth on): <service>-kserve-route-authn, as ODH names it.
	RouteAuthPolicySuffix = "-kserve-route-authn"
	// DefaultAuthAudience is the audience a service's TokenReview accepts
	// tokens for unless told otherwise: the API server's own on OpenShift
	// (docs/auth.md, "Audiences").
	DefaultAuthAudience = "https://kubernetes.default.svc"
)

// Models-as-a-Service at the gateway: the defaults of what the AuthPolicy
// of a service's MaaS route checks callers with (docs/maas.md).
const (
	// MaaSTokenAudience is the minted MaaS tokens' audience, ODH's
	// <gateway>-sa.
	MaaSTokenAudience = "maas-default-gateway-sa"
	// MaaSAPIServerURL is the cluster's API server as Authorino reaches it.
	MaaSAPIServerURL = "https://kubernetes.default.svc"
	// MaaSTierReviewSecret is the Secret in Authorino's namespace holding
	// its token for the tier lookup (the chart makes it).
	MaaSTierReviewSecret = "odh-serving-maas-tier-reviewer" //nolint:gosec // G101: a Secret's name, not a credential
	// MaaSTierCacheTTL is how long, in seconds, Authorino keeps a user's
	// tier.
	MaaSTierCacheTTL = 300
)

// Gateways, in the system namespace unless told otherwise.
const (
	// IngressGatewayName is the Gateway managed routes attach to by default.
	IngressGatewayName = "kserve-ingress-gateway"
	// InternalGatewayName is the chart's Gateway for in-cluster callers.
	InternalGatewayName = "kserve-internal-gateway"
)

// Phase is where a service's route stands in the move from the v1alpha2 to
// the v1 InferencePool API.
type Phase string

// The migration phases, in order. The route sends traffic to:
const (
	// PhaseAlpha2: the v1alpha2 pool only; only its CRD exists.
	PhaseAlpha2 Phase = "alpha2"
	// PhaseDual: both pools, v1alpha2 at weight 100 and v1 at 0.
	PhaseDual Phase = "dual"
	// PhaseV1: both pools, v1 at weight 100 and v1alpha2 at 0; the route is
	// marked migrated, and never goes back.
	PhaseV1 Phase = "v1"
	// PhaseRetired: the v1 pool only; the v1alpha2 pool is gone.
	PhaseRetired Phase = "retired"
)

// Phases lists the phases in order.
var Phases = []Phase{PhaseAlpha2, PhaseDual, PhaseV1, PhaseRetired}

// ParsePhase checks a phase name.
func ParsePhase(s string) (Phase, error) { return parse("migration phase", s, Phases...) }

// CertMode is where the workloads' and the endpoint picker's serving
// certificates come from. Render never makes a key: that would make its
// output differ on every run.
type CertMode string

const (
	// CertSelfSigned means the controller writes the secret the presets mount
	// (<name>-kserve-self-signed-certs). Nothing is rendered for it.
	CertSelfSigned CertMode = "self-signed"
	// CertServiceCA means OpenShift's service CA signs a certificate for each
	// Service, asked for by an annotation; the endpoint picker gets a
	// secret of its own, since one secret cannot serve two Services.
	CertServiceCA CertMode = "service-ca"
	// CertManager means a cert-manager Certificate per Service, with an ECDSA
	// P-256 key, signed by the configured issuer (CertIssuerKind and
	// CertIssuerName by default).
	CertManager CertMode = "cert-manager"
)

// OCIModelSource is how an oci:// model reaches the main container.
type OCIModelSource string

const (
	// OCIModelcar runs the model image as a container beside main, as
	// KServe's modelcar does: the pod shares its process namespace and
	// the model appears at /mnt/models through /proc/<pid>/root. It works
	// on every cluster.
	OCIModelcar OCIModelSource = "modelcar"
	// OCIImageVolume mounts the model image as an image volume. It needs
	// the ImageVolume feature gate (beta and off by default in Kubernetes
	// 1.33), but no extra container.
	OCIImageVolume OCIModelSource = "image-volume"
)

// ParseOCIModelSource checks an OCI model source name.
func ParseOCIModelSource(s string) (OCIModelSource, error) {
	return parse("OCI model source", s, OCIModelcar, OCIImageVolume)
}

// The issuer cert-manager Certificates name unless told otherwise: the
// chart's CA ClusterIssuer.
const (
	CertIssuerKind = "ClusterIssuer"
	CertIssuerName = "odh-serving-ca"
)

// ParseCertMode checks a certificate mode name.
func ParseCertMode(s string) (CertMode, error) {
	return parse("certificate mode", s, CertSelfSigned, CertServiceCA, CertManager)
}

// GatewayTLS is what tells the gateway to originate TLS to the model
// servers and the endpoint picker, which serve only TLS.
type GatewayTLS string

const (
	// GatewayTLSNone renders nothing: the gateway is told some other way.
	GatewayTLSNone GatewayTLS = "none"
	// GatewayTLSIstio renders Istio DestinationRules, as ODH's KServe does
	// for gateway classes of Istio and OpenShift.
	GatewayTLSIstio GatewayTLS = "istio"
	// GatewayTLSBackendTLSPolicy renders Gateway API BackendTLSPolicies.
	GatewayTLSBackendTLSPolicy GatewayTLS = "backend-tls-policy"
)

// ParseGatewayTLS checks a gateway TLS name.
func ParseGatewayTLS(s string) (GatewayTLS, error) {
	return parse("gateway TLS", s, GatewayTLSNone, GatewayTLSIstio, GatewayTLSBackendTLSPolicy)
}

// parse returns s if it is one of values; the error names what s is and
// the values, in order.
func parse[T ~string](what, s string, values ...T) (T, error) {
	if i := slices.Index(values, T(s)); i >= 0 {
		return values[i], nil
	}
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = string(v)
	}
	last := len(names) - 1
	return "", fmt.Errorf("unknown %s %q: want %s or %s", what, s, strings.Join(names[:last], ", "), names[last])
}

// IstioGatewayControllers are the GatewayClass controller names of Istio's
// gateways (OpenShift's included): ODH's KServe renders DestinationRules
// for routes on their gateways, and so do we.
var IstioGatewayControllers = []string{
	"istio.io/gateway-controller",
	"istio.io/unmanaged-gateway",
	"openshift.io/gateway-controller/v1",
}

// BackendTLSPolicyGatewayControllers are the GatewayClass controller names
// of the gateways, other than Istio's, that originate TLS as a
// BackendTLSPolicy says: Envoy Gateway's and kgateway's. The controller
// renders BackendTLSPolicies for routes on their gateways only; a class it
// does not know gets nothing, since a policy nobody reads would look like
// TLS that is configured.
var BackendTLSPolicyGatewayControllers = []string{
	"gateway.envoyproxy.io/gatewayclass-controller",
	"kgateway.dev/kgateway",
}

// Where the gateway finds the CA that signs the serving certificates.
const (
	// CABundleName names the Secret (in the gateway's namespace, for
	// Istio's credentialName) and the ConfigMap (in the service's
	// namespace, for BackendTLSPolicy) that hold the CA certificate under
	// CABundleKey. The controller keeps both in the self-signed mode.
	CABundleName = "odh-serving-ca-bundle"
	CABundleKey  = "ca.crt"
	// ServiceCAFile is where OpenShift mounts its service CA into every
	// pod, the gateway's included.
	ServiceCAFile = "/var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt"
	// ServiceCAConfigMap is the ConfigMap OpenShift puts in every
	// namespace with its service CA under ServiceCAConfigMapKey.
	ServiceCAConfigMap    = "openshift-service-ca.crt"
	ServiceCAConfigMapKey = "service-ca.crt"
	// LabelIstioInferencePool is on the Service Istio makes for an
	// InferencePool (its "shadow" Service), with the pool's name.
	LabelIstioInferencePool = "istio.io/inferencepool-name"
)

// MetricsReaderClusterRole grants get on the non-resource URL /metrics,
// which the endpoint picker checks before it serves its metrics; the
// chart makes it, as ODH's KServe install does.
const MetricsReaderClusterRole = "kserve-metrics-reader-cluster-role"
