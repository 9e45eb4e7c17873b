package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// enabler starts the watches of optional kinds when their CRDs are
// established, while the manager runs: a cluster that gets GIE, LWS or the
// Gateway API after the controller started needs no restart.
type enabler struct {
	r          *Reconciler
	mgr        manager.Manager
	controller controller.Controller
	crds       cache.Cache

	mu sync.Mutex
	// done holds the steps of enable that succeeded, by CRD and step (the
	// CRD alone once its kind is watched): a failed enable is tried again
	// from the step that failed, and an index or a watch is added once.
	done map[string]bool
}

// CRDControllerName names the controller that watches CRDs.
const CRDControllerName = "odh-serving-crds"

// syncTimeout bounds the wait for a new kind's cache to sync; the CRD is
// reconciled again, with backoff, if it does not.
const syncTimeout = time.Minute

// wanted are the optional CRDs this configuration uses.
func (e *enabler) wanted() []string {
	var out []string
	for crd := range optionalCRDs {
		if crd == crdCertificate && e.r.opts.CertMode != convention.CertManager {
			continue
		}
		if (crd == crdPodMonitor || crd == crdServiceMonitor) && !e.r.opts.monitoring() {
			continue
		}
		// In static mode Helm renders the children: what tells gateways to
		// originate TLS is not the controller's to decide.
		if (crd == crdGatewayClass || crd == crdDestinationRule || crd == crdBackendTLSPolicy) && e.r.opts.StaticMode {
			continue
		}
		// AuthPolicies matter only with auth on or MaaS (a MaaS route is
		// never served without its own), and in static mode Helm renders
		// them.
		if crd == crdAuthPolicy && ((!e.r.opts.Auth && !e.r.opts.MaaS) || e.r.opts.StaticMode) {
			continue
		}
		out = append(out, crd)
	}
	slices.Sort(out)
	return out
}

// enable starts the watch of crd's kind once, with the index it needs.
// With started (the manager runs), it returns only when the kind's cache
// has synced, so the services reconciled next read it whole.
//
// Any step may fail for a while after the CRD is established: the API
// server lists a new group version in discovery a little later, and until
// then the REST mapper knows no such kind. The caller tries again; the
// steps that succeeded are not repeated, and nothing is reported done
// before every step is.
func (e *enabler) enable(ctx context.Context, crd string, started bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done == nil {
		e.done = map[string]bool{}
	}
	if e.done[crd] {
		return nil
	}
	gvk := optionalCRDs[crd]
	k := kind{gvk: gvk, crd: crd}
	// Before the watch: source.Kind polls a kind it cannot map only every
	// 10 seconds, and reports that to no one.
	if _, err := e.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		return fmt.Errorf("map %s (discovery may not list it yet): %w", gvk, err)
	}
	step := func(name string, f func() error) error {
		if e.done[crd+" "+name] {
			return nil
		}
		if err := f(); err != nil {
			return err
		}
		e.done[crd+" "+name] = true
		return nil
	}
	if _, child := kindOf(gvk); child {
		if err := step("index children", func() error { return indexChildren(ctx, e.r.indexer, k) }); err != nil {
			return fmt.Errorf("index %s children: %w", gvk.Kind, err)
		}
	}
	var h handler.EventHandler
	switch crd {
	case crdHTTPRoute:
		if err := step("index routes", func() error { return indexRoutes(ctx, e.r.indexer) }); err != nil {
			return fmt.Errorf("index HTTPRoutes: %w", err)
		}
		h = handler.EnqueueRequestsFromMapFunc(e.r.forRoute)
	case crdGateway:
		h = handler.EnqueueRequestsFromMapFunc(e.r.forGateway)
	case crdGatewayClass:
		h = handler.EnqueueRequestsFromMapFunc(e.r.forGatewayClass)
	case crdPoolV1, crdPoolV1alpha2:
		h = handler.EnqueueRequestsFromMapFunc(e.r.forPool)
	case crdAuthPolicy:
		h = handler.EnqueueRequestsFromMapFunc(e.r.forAuthPolicy)
	case crdScaledObject:
		if err := step("index scale targets", func() error { return indexScalers(ctx, e.r.indexer, k.newObject()) }); err != nil {
			return fmt.Errorf("index ScaledObjects: %w", err)
		}
		h = handler.EnqueueRequestsFromMapFunc(e.r.forScaler)
	default:
		h = e.r.childHandler(e.mgr)
	}
	if started {
		// GetInformer starts the informer and waits for it to sync.
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		if _, err := e.mgr.GetCache().GetInformer(syncCtx, k.newObject()); err != nil {
			return fmt.Errorf("sync the %s cache: %w", gvk.Kind, err)
		}
	}
	if err := step("watch", func() error { return e.controller.Watch(source.Kind(e.mgr.GetCache(), k.newObject(), h)) }); err != nil {
		return fmt.Errorf("watch %s: %w", gvk.Kind, err)
	}
	e.done[crd] = true
	ctrl.LoggerFrom(ctx).Info("watching an optional kind", "crd", crd, "kind", gvk.String())
	return nil
}

// disable stops the watch of crd's kind, whose CRD is gone or no longer
// serves the version: its informer would list and watch a resource the API
// server does not serve, and fail, with back-off, for as long as the
// controller runs. The steps of enable are forgotten (the new informer
// needs its indexes again), so the kind is enabled afresh if the CRD comes
// back. The kind is unusable by then: no service reads it, so nothing
// starts the informer again meanwhile.
func (e *enabler) disable(ctx context.Context, crd string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	started := false
	for step := range e.done {
		if step == crd || strings.HasPrefix(step, crd+" ") {
			started = true
			delete(e.done, step)
		}
	}
	if !started {
		return
	}
	k := kind{gvk: optionalCRDs[crd], crd: crd}
	if err := e.mgr.GetCache().RemoveInformer(ctx, k.newObject()); err != nil {
		// Only a kind the scheme does not know fails, and optional kinds
		// are all known.
		ctrl.LoggerFrom(ctx).Error(err, "stop watching an optional kind", "crd", crd)
		return
	}
	ctrl.LoggerFrom(ctx).Info("stopped watching an optional kind", "crd", crd, "kind", k.gvk.String())
}

// setup adds the CRD watcher. It reads CRDs from a cache of its own that
// keeps no schemas: the CRDs of a large cluster are big, and the manager's
// cache must keep whole objects for anyone who reads and writes them.
func (e *enabler) setup() error {
	crds, err := cache.New(e.mgr.GetConfig(), cache.Options{
		HTTPClient: e.mgr.GetHTTPClient(), Scheme: e.mgr.GetScheme(), Mapper: e.mgr.GetRESTMapper(),
		DefaultTransform: stripCRD, NewInformer: newInformer,
	})
	if err != nil {
		return fmt.Errorf("CRD cache: %w", err)
	}
	e.crds = crds
	if err := e.mgr.Add(crdCache{crds}); err != nil {
		return err
	}
	c, err := controller.New(CRDControllerName, e.mgr, controller.Options{Reconciler: e, SkipNameValidation: ptr.To(true)})
	if err != nil {
		return fmt.Errorf("build the %s controller: %w", CRDControllerName, err)
	}
	wanted := e.wanted()
	return c.Watch(source.Kind(crds, &apiextensionsv1.CustomResourceDefinition{},
		&handler.TypedEnqueueRequestForObject[*apiextensionsv1.CustomResourceDefinition]{},
		predicate.NewTypedPredicateFuncs(func(crd *apiextensionsv1.CustomResourceDefinition) bool {
			return slices.Contains(wanted, crd.Name)
		})))
}

// Reconcile enables the kind of an established CRD, and reconciles every
// service again when a kind became usable or stopped being so.
func (e *enabler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	gvk, ok := optionalCRDs[req.Name]
	if !ok {
		return reconcile.Result{}, nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := e.crds.Get(ctx, req.NamespacedName, crd)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("get CustomResourceDefinition %s: %w", req.Name, err)
	}
	usable := err == nil && served(crd, gvk.Version)
	if usable {
		// Until the watch runs the kind stays unusable, and services that
		// need it keep waiting with CRDMissing; they are reconciled again
		// once it does.
		if err := e.enable(ctx, req.Name, true); err != nil {
			return reconcile.Result{}, err
		}
	}
	changed := e.r.kinds.set(req.Name, usable)
	if !usable {
		e.disable(ctx, req.Name)
	}
	if changed {
		ctrl.LoggerFrom(ctx).Info("an optional API changed; reconciling every service", "crd", req.Name, "usable", usable)
		return reconcile.Result{}, e.r.requeueAll(ctx)
	}
	return reconcile.Result{}, nil
}

// crdCache starts the CRD cache with the manager's caches.
type crdCache struct{ cache.Cache }

func (c crdCache) GetCache() cache.Cache { return c.Cache }

// stripCRD keeps what the watcher needs of a CRD: names, versions and
// conditions; not the schemas.
func stripCRD(obj any) (any, error) {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return obj, nil
	}
	crd.ManagedFields = nil
	crd.Spec.Conversion = nil
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Schema = nil
		crd.Spec.Versions[i].AdditionalPrinterColumns = nil
		crd.Spec.Versions[i].SelectableFields = nil
	}
	return crd, nil
}
