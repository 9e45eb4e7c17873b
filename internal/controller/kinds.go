package controller

import (
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// kind is a kind the controller applies, deletes or reads.
type kind struct {
	gvk schema.GroupVersionKind
	// crd names the CustomResourceDefinition that serves the kind; empty
	// for built-in kinds, which are always there.
	crd string
	// clusterScoped kinds cannot carry an owner reference to a service.
	clusterScoped bool
	// workload kinds fail WorkloadsReady when their CRD is missing; the
	// others fail RouterReady.
	workload bool
	// certManager kinds are used only in the cert-manager certificate mode.
	certManager bool
}

// newObject returns an empty object of the kind: typed when the kind has Go
// types, unstructured otherwise.
func (k kind) newObject() client.Object {
	if t, ok := typedKinds[k.gvk]; ok {
		return t.object()
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.gvk)
	return u
}

// newList returns an empty list of the kind.
func (k kind) newList() client.ObjectList {
	if t, ok := typedKinds[k.gvk]; ok {
		return t.list()
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
	return l
}

// The CRDs of the optional kinds.
const (
	crdLWS          = "leaderworkersets.leaderworkerset.x-k8s.io"
	crdPoolV1       = "inferencepools.inference.networking.k8s.io"
	crdPoolV1alpha2 = "inferencepools.inference.networking.x-k8s.io"
	crdHTTPRoute    = "httproutes.gateway.networking.k8s.io"
	crdGateway      = "gateways.gateway.networking.k8s.io"
	crdCertificate  = "certificates.cert-manager.io"
	// What makes gateways originate TLS, and the classes that say which
	// gateway a route is on.
	crdGatewayClass     = "gatewayclasses.gateway.networking.k8s.io"
	crdDestinationRule  = "destinationrules.networking.istio.io"
	crdBackendTLSPolicy = "backendtlspolicies.gateway.networking.k8s.io"
	// The Prometheus Operator's monitors.
	crdPodMonitor     = "podmonitors.monitoring.coreos.com"
	crdServiceMonitor = "servicemonitors.monitoring.coreos.com"
	// Kuadrant's AuthPolicy: with auth on, no route is served without it.
	crdAuthPolicy = convention.AuthPolicyCRD
)

var (
	gvkDeployment         = appsv1.SchemeGroupVersion.WithKind("Deployment")
	gvkService            = corev1.SchemeGroupVersion.WithKind("Service")
	gvkServiceAccount     = corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	gvkSecret             = corev1.SchemeGroupVersion.WithKind("Secret")
	gvkRole               = rbacv1.SchemeGroupVersion.WithKind("Role")
	gvkRoleBinding        = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
	gvkClusterRoleBinding = rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding")
	gvkLWS                = lwsv1.GroupVersion.WithKind("LeaderWorkerSet")
	gvkPoolV1             = gieapiv1.SchemeGroupVersion.WithKind("InferencePool")
	gvkPoolV1alpha2       = gieapixv1alpha2.SchemeGroupVersion.WithKind("InferencePool")
	gvkHTTPRoute          = gatewayv1.SchemeGroupVersion.WithKind("HTTPRoute")
	gvkGateway            = gatewayv1.SchemeGroupVersion.WithKind("Gateway")
	gvkCertificate        = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}
	gvkGatewayClass       = gatewayv1.SchemeGroupVersion.WithKind("GatewayClass")
	gvkDestinationRule    = schema.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "DestinationRule"}
	gvkBackendTLSPolicy   = gatewayv1.SchemeGroupVersion.WithKind("BackendTLSPolicy")
	gvkPodMonitor         = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}
	gvkServiceMonitor     = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}
	gvkAuthPolicy         = schema.GroupVersionKind{Group: convention.KuadrantGroup, Version: "v1", Kind: "AuthPolicy"}
	gvkNetworkPolicy      = networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy")
)

// childKinds are every kind the engine renders. The label inventory that
// finds children to delete goes over these; the apply order is the
// engine's (engine.Child.Wave).
var childKinds = []kind{
	{gvk: gvkServiceAccount},
	{gvk: gvkRole},
	{gvk: gvkRoleBinding},
	{gvk: gvkClusterRoleBinding, clusterScoped: true},
	{gvk: gvkCertificate, crd: crdCertificate, certManager: true},
	{gvk: gvkService},
	{gvk: gvkNetworkPolicy},
	{gvk: gvkDeployment, workload: true},
	{gvk: gvkLWS, crd: crdLWS, workload: true},
	{gvk: gvkHPA},
	{gvk: gvkScaledObject, crd: crdScaledObject},
	{gvk: gvkPoolV1, crd: crdPoolV1},
	{gvk: gvkPoolV1alpha2, crd: crdPoolV1alpha2},
	{gvk: gvkHTTPRoute, crd: crdHTTPRoute},
	// Rendered only while their CRDs are usable (Reconciler.monitoring and
	// gatewayTLS): never CRDMissing. Secrets are the metrics readers'
	// tokens; the cache holds only those labelled managed-by.
	{gvk: gvkSecret},
	{gvk: gvkDestinationRule, crd: crdDestinationRule},
	{gvk: gvkBackendTLSPolicy, crd: crdBackendTLSPolicy},
	{gvk: gvkPodMonitor, crd: crdPodMonitor},
	{gvk: gvkServiceMonitor, crd: crdServiceMonitor},
	// A service's AuthPolicies on its routes (auth on): protected, or
	// anonymous for enable-auth "false".
	{gvk: gvkAuthPolicy, crd: crdAuthPolicy},
}

func kindOf(gvk schema.GroupVersionKind) (kind, bool) {
	i := slices.IndexFunc(childKinds, func(k kind) bool { return k.gvk == gvk })
	if i < 0 {
		return kind{}, false
	}
	return childKinds[i], true
}

// typedKinds are the kinds the controller reads as Go types; it reads the
// others as unstructured objects.
var typedKinds = map[schema.GroupVersionKind]goTypes{
	gvkDeployment:         goType[appsv1.Deployment, appsv1.DeploymentList](),
	gvkService:            goType[corev1.Service, corev1.ServiceList](),
	gvkServiceAccount:     goType[corev1.ServiceAccount, corev1.ServiceAccountList](),
	gvkSecret:             goType[corev1.Secret, corev1.SecretList](),
	gvkRole:               goType[rbacv1.Role, rbacv1.RoleList](),
	gvkRoleBinding:        goType[rbacv1.RoleBinding, rbacv1.RoleBindingList](),
	gvkClusterRoleBinding: goType[rbacv1.ClusterRoleBinding, rbacv1.ClusterRoleBindingList](),
	gvkLWS:                goType[lwsv1.LeaderWorkerSet, lwsv1.LeaderWorkerSetList](),
	gvkHPA:                goType[autoscalingv2.HorizontalPodAutoscaler, autoscalingv2.HorizontalPodAutoscalerList](),
	gvkNetworkPolicy:      goType[networkingv1.NetworkPolicy, networkingv1.NetworkPolicyList](),
	gvkPoolV1:             goType[gieapiv1.InferencePool, gieapiv1.InferencePoolList](),
	gvkPoolV1alpha2:       goType[gieapixv1alpha2.InferencePool, gieapixv1alpha2.InferencePoolList](),
	gvkHTTPRoute:          goType[gatewayv1.HTTPRoute, gatewayv1.HTTPRouteList](),
	gvkGateway:            goType[gatewayv1.Gateway, gatewayv1.GatewayList](),
	gvkGatewayClass:       goType[gatewayv1.GatewayClass, gatewayv1.GatewayClassList](),
}

// goTypes make an empty object and an empty list of a kind.
type goTypes struct {
	object func() client.Object
	list   func() client.ObjectList
}

// goType is the goTypes of the kind whose object type is O and list type L.
func goType[O, L any, PO interface {
	*O
	client.Object
}, PL interface {
	*L
	client.ObjectList
}]() goTypes {
	return goTypes{object: func() client.Object { return PO(new(O)) }, list: func() client.ObjectList { return PL(new(L)) }}
}

// optionalCRDs are the CRDs whose kinds the controller watches once they
// are established, with the version it needs served.
var optionalCRDs = map[string]schema.GroupVersionKind{
	crdLWS:          gvkLWS,
	crdPoolV1:       gvkPoolV1,
	crdPoolV1alpha2: gvkPoolV1alpha2,
	crdHTTPRoute:    gvkHTTPRoute,
	crdGateway:      gvkGateway,
	crdCertificate:  gvkCertificate,
	crdScaledObject: gvkScaledObject,

	crdGatewayClass:     gvkGatewayClass,
	crdDestinationRule:  gvkDestinationRule,
	crdBackendTLSPolicy: gvkBackendTLSPolicy,
	crdPodMonitor:       gvkPodMonitor,
	crdServiceMonitor:   gvkServiceMonitor,

	crdAuthPolicy: gvkAuthPolicy,
}

// served reports whether crd is established and serves version.
func served(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	if crd == nil || !crd.DeletionTimestamp.IsZero() {
		return false
	}
	established := false
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			established = true
		}
	}
	return established && slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Name == version && v.Served
	})
}

// availability tracks which optional kinds are usable. A kind becomes
// usable once its watch has started and its cache synced (enabler.enable);
// it stops being usable when its CRD goes away (the watch stays, and
// resumes if the CRD returns).
type availability struct {
	mu     sync.RWMutex
	usable map[string]bool // by CRD name
}

func newAvailability() *availability {
	return &availability{usable: map[string]bool{}}
}

// has reports whether the kind can be read and written now.
func (a *availability) has(k kind) bool {
	if k.crd == "" {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.usable[k.crd]
}

func (a *availability) hasCRD(crd string) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.usable[crd]
}

func (a *availability) set(crd string, usable bool) (changed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	changed = a.usable[crd] != usable
	a.usable[crd] = usable
	return changed
}
