package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/presets"
)

// ControllerName names the service controller in logs and metrics.
const ControllerName = "llminferenceservice"

// Setup adds the service controller and the CRD watcher that enables
// optional kinds to mgr. mgr should come from NewManager, whose cache
// settings the controller relies on. What it reads from the API server (the
// optional CRDs, the REST mappings of the indexed kinds) it reads within
// ctx and StartTimeout.
func Setup(ctx context.Context, mgr manager.Manager, opts Options) error {
	_, err := setup(ctx, mgr, opts)
	return err
}

// builtins are the images the presets name, with the overrides of
// opts.Images, and the built-in presets.
func (o Options) builtins() (map[string]string, []*preset.Preset, error) {
	images, err := presets.Images()
	if err != nil {
		return nil, nil, err
	}
	// Overrides of shipped keys, and new keys for team presets
	// ({{ .GlobalConfig.Images.vllmRocm }}).
	maps.Copy(images, o.Images)
	builtin, err := presets.Load(o.SystemNamespace, *o.PresetPrefix)
	if err != nil {
		return nil, nil, err
	}
	return images, builtin, nil
}

// setup is Setup; it returns the service reconciler it added.
func setup(ctx context.Context, mgr manager.Manager, opts Options) (*Reconciler, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := startContext(ctx, opts.StartTimeout)
	defer cancel()
	images, builtin, err := opts.builtins()
	if err != nil {
		return nil, err
	}
	// Every read goes through one reader: the cache, or the API server,
	// within one rate limit, while the kind's cache is behind (freshness).
	indexes := &indexFuncs{}
	apiReader := newLimitedReader(mgr.GetAPIReader())
	read := &freshReader{cache: mgr.GetClient(), api: apiReader, fresh: opts.fresh, scheme: mgr.GetScheme(), indexes: indexes}
	fc := freshClient{Client: mgr.GetClient(), read: read}
	shadows, err := newShadowCache(mgr, opts)
	if err != nil {
		return nil, err
	}
	r := &Reconciler{
		client: fc, apiReader: apiReader, scheme: mgr.GetScheme(), opts: opts, images: images,
		shadows:  &freshReader{cache: shadows, api: apiReader, fresh: opts.fresh, scheme: mgr.GetScheme(), indexes: indexes},
		owners:   mgr.GetAPIReader(),
		indexer:  recordingIndexer{indexer: mgr.GetFieldIndexer(), scheme: mgr.GetScheme(), into: indexes},
		presets:  &presetCache{reader: fc, systemNamespace: opts.SystemNamespace, builtin: builtin},
		kinds:    newAvailability(),
		requeue:  make(chan event.GenericEvent, 1024),
		recorder: mgr.GetEventRecorderFor(ControllerName),
	}
	if opts.MaaS {
		r.tiers = &tierSource{
			reader: fc, prefix: opts.Tiers.NamespacePrefix,
			key: types.NamespacedName{Namespace: opts.Tiers.ConfigMapNamespace, Name: opts.Tiers.ConfigMapName},
		}
	}
	// Static mode too: Helm renders no key, so the workloads' and endpoint
	// pickers' self-signed secrets come from here in either mode.
	if opts.CertMode == convention.CertSelfSigned {
		r.authority = opts.ca
		if r.authority == nil {
			r.authority = newAuthority(mgr, opts)
		}
	}
	// Adding an index maps its kind, which asks the API server.
	if err := startStep(ctx, "index LLMInferenceServices", func(ctx context.Context) error {
		return r.indexServices(ctx, r.indexer)
	}); err != nil {
		return nil, err
	}
	for _, k := range childKinds {
		if k.crd == "" && r.holds(k) {
			if err := startStep(ctx, "index "+k.gvk.Kind+" children", func(ctx context.Context) error {
				return indexChildren(ctx, r.indexer, k)
			}); err != nil {
				return nil, err
			}
		}
	}

	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha2.LLMInferenceService{}, builder.WithPredicates(serviceChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles, SkipNameValidation: ptr.To(true)}).
		Watches(&v1alpha2.LLMInferenceServiceConfig{}, r.configHandler()).
		WatchesRawSource(source.Channel(r.requeue, &handler.EnqueueRequestForObject{}))
	children := []client.Object{
		&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.Service{}, &appsv1.Deployment{}, &networkingv1.NetworkPolicy{},
	}
	if r.makesSecrets() {
		children = append(children, &corev1.Secret{})
	}
	for _, obj := range children {
		b = b.Watches(obj, r.childHandler(mgr))
	}
	b = b.Watches(&rbacv1.ClusterRoleBinding{}, handler.EnqueueRequestsFromMapFunc(forClusterScoped))
	// The workloads' pods say why a workload is not Ready (pods.go).
	b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(forPod), builder.WithPredicates(podChanged))
	if err := startStep(ctx, "index HorizontalPodAutoscalers", func(ctx context.Context) error {
		return indexScalers(ctx, r.indexer, &autoscalingv2.HorizontalPodAutoscaler{})
	}); err != nil {
		return nil, err
	}
	b = b.Watches(&autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(r.forScaler))
	if r.tiers != nil {
		// The cache holds only the tier ConfigMap (NewManager).
		b = b.Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.forTierConfig))
	}
	// Istio's Service of a pool names the DestinationRule's host; those
	// Services are in a cache of their own (scope.go).
	b = b.WatchesRawSource(source.Kind(shadows, client.Object(&corev1.Service{}), handler.EnqueueRequestsFromMapFunc(r.forShadowService)))
	c, err := b.Build(r)
	if err != nil {
		return nil, fmt.Errorf("build the %s controller: %w", ControllerName, err)
	}
	e := &enabler{r: r, mgr: mgr, controller: c}

	// Kinds whose CRDs are there now are watched from the start; the rest
	// when their CRDs appear.
	for _, crd := range e.wanted() {
		got := &apiextensionsv1.CustomResourceDefinition{}
		err := startStep(ctx, "get CustomResourceDefinition "+crd, func(ctx context.Context) error {
			return mgr.GetAPIReader().Get(ctx, types.NamespacedName{Name: crd}, got)
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err == nil && served(got, optionalCRDs[crd].Version) {
			if err := startStep(ctx, "watch the kind of CustomResourceDefinition "+crd, func(ctx context.Context) error {
				return e.enable(ctx, crd, false)
			}); err != nil {
				if context.Cause(ctx) != nil {
					return nil, err // the start ended: nothing is left to the watcher
				}
				// A CRD made just before the start may not be in discovery
				// yet: the CRD watcher enables the kind when it can.
				mgr.GetLogger().Info("an optional kind is left to the CRD watcher", "crd", crd, "reason", err.Error())
				continue
			}
			r.kinds.set(crd, true)
		}
	}
	return r, e.setup()
}

// makesSecrets reports whether the controller makes Secrets: the
// self-signed certificates (r.authority) or the metrics readers' tokens
// (monitoring). Only then does the chart let it read Secrets, and only then
// does it watch, index, prune or delete them. In static mode with
// cert-manager or the service CA operator it makes none.
func (r *Reconciler) makesSecrets() bool {
	return r.authority != nil || r.opts.monitoring()
}

// holds reports whether the controller reads and writes children of kind k
// at all: every child kind but Secrets, which only while it makes them.
func (r *Reconciler) holds(k kind) bool {
	return k.gvk != gvkSecret || r.makesSecrets()
}

func newAuthority(mgr manager.Manager, opts Options) *certs.Authority {
	return &certs.Authority{
		Secret: types.NamespacedName{Namespace: opts.SystemNamespace, Name: certs.CASecretName},
		// Read the CA from the API server: an administrator's CA secret may
		// lack the label the secret cache selects on.
		Reader: mgr.GetAPIReader(),
	}
}

// serviceChanged passes every event of a service except status-only
// updates, which are the controller's own writes. Periodic resyncs pass.
var serviceChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetResourceVersion() == n.GetResourceVersion() ||
			o.GetGeneration() != n.GetGeneration() ||
			!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
			!maps.Equal(o.GetLabels(), n.GetLabels()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
	},
}

// configHandler maps a preset to the services that use it (forConfig),
// and forgets a deleted one's compiled form.
func (r *Reconciler) configHandler() handler.EventHandler {
	services := handler.EnqueueRequestsFromMapFunc(r.forConfig)
	return handler.Funcs{
		CreateFunc:  services.Create,
		UpdateFunc:  services.Update,
		GenericFunc: services.Generic,
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.presets.forget(e.Object.GetNamespace(), e.Object.GetName())
			services.Delete(ctx, e, q)
		},
	}
}

// childHandler maps a child to its service: by controller reference, or in
// static mode (where Helm makes the children) by the engine's labels.
func (r *Reconciler) childHandler(mgr manager.Manager) handler.EventHandler {
	if !r.opts.StaticMode {
		return handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &v1alpha2.LLMInferenceService{}, handler.OnlyControllerOwner())
	}
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		q := requests{}
		r.owner(q, obj)
		return q.list()
	})
}

// requeueAll reconciles every service again, after the kinds the cluster
// serves changed.
func (r *Reconciler) requeueAll(ctx context.Context) error {
	list := &v1alpha2.LLMInferenceServiceList{}
	if err := r.client.List(ctx, list); err != nil {
		return fmt.Errorf("list LLMInferenceServices: %w", err)
	}
	for i := range list.Items {
		select {
		case r.requeue <- event.GenericEvent{Object: &list.Items[i]}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
