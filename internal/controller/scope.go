package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// What the manager's cache holds of each kind.
//
// Why: a cache holds every object of a kind it watches, in every watched
// namespace, and its transform (cacheTransform) walks each one on every
// change. A cluster holds far more Deployments, Services, ServiceAccounts,
// Roles, RoleBindings and Secrets than odh-serving makes, and the
// controller needs only its own: every child carries the engine's part-of
// label, the Secrets odh-serving writes its managed-by label. Kinds that
// users write and the controller must find without a label of ours are
// cached whole: HorizontalPodAutoscalers and KEDA's ScaledObjects (those
// put on a workload take its replicas, scaling.go), HTTPRoutes (a service
// may refer to the user's), Gateways and the optional CRDs' kinds (which
// ByObject can name only once their CRDs are served).

// childSelector selects the children: the engine labels every child it
// renders part-of.
var childSelector = labels.SelectorFromSet(labels.Set{convention.LabelPartOf: convention.PartOf})

// selectedKinds are the kinds whose cache holds only objects with a label
// of ours, with the selector. That a name is missing from their cache says
// nothing about the API server: someone else's object may hold it, which
// applyChild must not take over (checkUncached).
var selectedKinds = map[schema.GroupVersionKind]labels.Selector{
	gvkDeployment:     childSelector,
	gvkService:        childSelector,
	gvkServiceAccount: childSelector,
	gvkRole:           childSelector,
	gvkRoleBinding:    childSelector,
	gvkNetworkPolicy:  childSelector,
	// Secrets are many and sensitive: only ours (serving certificates,
	// the CA and the metrics readers' tokens carry managed-by).
	gvkSecret: labels.SelectorFromSet(labels.Set{convention.LabelManagedBy: convention.ManagedBy}),
	// Cluster-scoped children carry the part-of label too.
	gvkClusterRoleBinding: childSelector,
}

// cacheOptions are the manager's cache options but for the Gateways, which
// NewManager adds when the API is served.
func cacheOptions(opts Options) cache.Options {
	co := cache.Options{
		DefaultTransform:  cacheTransform,
		NewInformer:       opts.fresh.newInformer,
		DefaultNamespaces: cacheNamespaces(opts),
		ByObject:          selectedByObject(),
	}
	if opts.MaaS {
		// ConfigMaps are many: only the tier list.
		co.ByObject[&corev1.ConfigMap{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{opts.Tiers.ConfigMapNamespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", opts.Tiers.ConfigMapName),
		}
	}
	if opts.SyncPeriod > 0 {
		co.SyncPeriod = &opts.SyncPeriod
	}
	return co
}

// selectedByObject is the cache's ByObject for selectedKinds, and the pods
// of the services' workloads (their template carries the part-of label),
// slimmed to their status (pods.go).
func selectedByObject() map[client.Object]cache.ByObject {
	out := map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: childSelector, Transform: podTransform},
	}
	for gvk, sel := range selectedKinds {
		out[typedKinds[gvk].object()] = cache.ByObject{Label: sel}
	}
	return out
}

// cacheNamespaces are the namespaces the caches hold, with
// WatchNamespaces: those, the system namespace and the gateways' (their
// Gateways, and the AuthPolicies on them that auth needs before it serves
// a route, auth.go). nil means every namespace.
func cacheNamespaces(opts Options) map[string]cache.Config {
	if len(opts.WatchNamespaces) == 0 {
		return nil
	}
	out := map[string]cache.Config{}
	for _, ns := range append(opts.WatchNamespaces, opts.SystemNamespace, opts.IngressGatewayNamespace, opts.InternalGatewayNamespace,
		opts.MaaSGatewayNamespace) {
		if ns != "" {
			out[ns] = cache.Config{}
		}
	}
	return out
}

// newShadowCache is a second, small cache of the Services Istio makes for
// InferencePools (labelled with the pool's name, none of ours), which name
// the DestinationRule's host (shadowService). The manager's cache holds
// only the children among Services; label selectors cannot say "ours or
// Istio's". The manager starts it with its own cache.
func newShadowCache(mgr manager.Manager, opts Options) (cache.Cache, error) {
	istio, err := labels.NewRequirement(convention.LabelIstioInferencePool, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	copts := cache.Options{
		HTTPClient:        mgr.GetHTTPClient(),
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: cacheNamespaces(opts),
		DefaultTransform:  cacheTransform,
		NewInformer:       opts.fresh.newInformer,
		ByObject:          map[client.Object]cache.ByObject{&corev1.Service{}: {Label: labels.NewSelector().Add(*istio)}},
	}
	if opts.SyncPeriod > 0 {
		copts.SyncPeriod = &opts.SyncPeriod
	}
	c, err := cache.New(mgr.GetConfig(), copts)
	if err != nil {
		return nil, fmt.Errorf("make the cache of Istio's InferencePool Services: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("add the cache of Istio's InferencePool Services: %w", err)
	}
	return c, nil
}
