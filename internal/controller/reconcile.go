package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/naming"
	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/internal/migration"
)

// Finalizer is on every service the controller manages, so that its
// cluster-scoped children, which no owner reference can reach, are deleted
// with it.
const Finalizer = "serving.kserve.io/llmisvc-finalizer"

// +kubebuilder:rbac:groups=serving.kserve.io,resources=llminferenceservices,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=serving.kserve.io,resources=llminferenceservices/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=serving.kserve.io,resources=llminferenceservices/finalizers,verbs=update
// +kubebuilder:rbac:groups=serving.kserve.io,resources=llminferenceserviceconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts;secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings;clusterrolebindings,verbs=get;list;watch;create;update;patch;delete
// The children's Roles and the endpoint picker's binding of
// system:auth-delegator grant these; the controller holds them itself
// rather than escalate or bind.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=inference.networking.x-k8s.io;llm-d.ai,resources=inferenceobjectives;inferencemodelrewrites,verbs=get;list;watch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=inference.networking.k8s.io;inference.networking.x-k8s.io,resources=inferencepools,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Reconciler reconciles LLMInferenceServices.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	scheme    *runtime.Scheme
	opts      Options
	images    map[string]string
	presets   *presetCache
	kinds     *availability
	authority *certs.Authority
	// requeue takes services to reconcile again, e.g. when a CRD appears.
	requeue chan event.GenericEvent
}

// pass is one reconcile of one service.
type pass struct {
	svc      *v1alpha2.LLMInferenceService
	now      time.Time
	conds    *conditions
	spec     *v1alpha2.LLMInferenceServiceSpec // the service merged with its baseRefs
	decision migration.Decision
	children []*unstructured.Unstructured
	kinds    []kind
	// applied holds the children written in this pass as the API server
	// returned them: newer than the cache, which has not seen them yet.
	applied map[childID]*unstructured.Unstructured
	status  v1alpha2.LLMInferenceServiceStatus
	// settled is true when the pass reached a result for this generation,
	// so observedGeneration may move on.
	settled bool
}

// Reconcile brings one service's children and status in line with its
// spec. It does the same whatever the event.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if len(r.opts.WatchNamespaces) > 0 && !slices.Contains(r.opts.WatchNamespaces, req.Namespace) {
		return ctrl.Result{}, nil
	}
	svc := &v1alpha2.LLMInferenceService{}
	if err := r.client.Get(ctx, req.NamespacedName, svc); err != nil {
		if apierrors.IsNotFound(err) {
			phases.forget(req.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get LLMInferenceService %s: %w", req.NamespacedName, err)
	}
	if !svc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, svc)
	}
	if !r.opts.StaticMode && !controllerutil.ContainsFinalizer(svc, Finalizer) {
		patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(svc, Finalizer)
		if err := r.client.Patch(ctx, svc, patch, client.FieldOwner(FieldManager)); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to LLMInferenceService %s: %w", req.NamespacedName, err)
		}
	}
	p := &pass{svc: svc, now: r.opts.Now(), conds: newConditions(svc, r.opts.Now()), status: *svc.Status.DeepCopy()}
	requeue, err := r.sync(ctx, p)
	if serr := r.writeStatus(ctx, p); serr != nil {
		return ctrl.Result{}, errors.Join(err, serr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// sync renders the service, applies and prunes its children and works out
// its status. It returns when to look again for time-based steps.
func (r *Reconciler) sync(ctx context.Context, p *pass) (time.Duration, error) {
	catalog, err := r.presets.catalog(ctx, p.svc.Namespace)
	if err != nil {
		return 0, err
	}
	spec, err := shape(p.svc, catalog)
	if err != nil {
		p.renderFailed(err)
		return 0, nil
	}
	p.spec = spec
	in, err := r.migrationInput(ctx, p)
	if err != nil {
		return 0, err
	}
	p.decision = migration.Decide(in)
	res, err := engine.Render(ctx, p.svc, catalog, r.opts.engineOptions(r.images, p.decision.Phase))
	if err != nil {
		p.renderFailed(err)
		return 0, nil
	}
	p.conds.set(v1alpha2.ConditionPresetsCombined, "True", ReasonCombined, "")
	if p.children, err = res.Unstructured(); err != nil {
		return 0, err
	}
	if missing := r.classify(p); len(missing) > 0 {
		p.crdMissing(missing)
		return 0, nil
	}
	certRequeue, err := r.ensureTLS(ctx, p)
	if err != nil {
		p.failed(false, err)
		return 0, err
	}
	if r.opts.StaticMode {
		if err := r.moveWeights(ctx, p); err != nil {
			return 0, err
		}
		return minPositive(p.decision.RequeueAfter, certRequeue), r.observe(ctx, p)
	}
	if err := r.applyAll(ctx, p); err != nil {
		if onlyNotControlled(err) {
			// Someone else's object holds a child's name. Its removal sends
			// no event here, so look again soon rather than back off.
			return notControlledRetry, nil
		}
		return 0, err
	}
	r.redecide(p, in)
	if err := r.prune(ctx, p); err != nil {
		return 0, err
	}
	if err := r.observe(ctx, p); err != nil {
		return 0, err
	}
	return minPositive(p.decision.RequeueAfter, certRequeue), nil
}

// migrationInput reads the live route and pools: what internal/migration
// decides the service's phase from.
func (r *Reconciler) migrationInput(ctx context.Context, p *pass) (migration.Input, error) {
	ns := p.svc.Namespace
	in := migration.Input{
		Service: p.svc, Now: p.now, Grace: r.opts.MigrationGracePeriod,
		V1Served: r.kinds.hasCRD(crdPoolV1), Alpha2Served: r.kinds.hasCRD(crdPoolV1alpha2),
	}
	if r.kinds.hasCRD(crdHTTPRoute) {
		name, err := naming.ChildName(p.svc.Name, "-kserve-route")
		if err == nil {
			rt := &gatewayv1.HTTPRoute{}
			if found, err := r.getOptional(ctx, types.NamespacedName{Namespace: ns, Name: name}, rt); err != nil {
				return in, err
			} else if found {
				in.Route = rt
			}
		}
	}
	pool := poolName(p.svc, p.spec)
	if in.V1Served {
		v1 := &gieapiv1.InferencePool{}
		if found, err := r.getOptional(ctx, types.NamespacedName{Namespace: ns, Name: pool}, v1); err != nil {
			return in, err
		} else if found {
			in.PoolV1 = v1
		}
	}
	if in.Alpha2Served {
		a2 := &gieapixv1alpha2.InferencePool{}
		if found, err := r.getOptional(ctx, types.NamespacedName{Namespace: ns, Name: pool}, a2); err != nil {
			return in, err
		} else if found {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a2)
			if err != nil {
				return in, fmt.Errorf("convert InferencePool %s/%s: %w", ns, pool, err)
			}
			in.PoolAlpha2 = &unstructured.Unstructured{Object: m}
			in.PoolAlpha2.SetGroupVersionKind(gvkPoolV1alpha2)
		}
	}
	return in, nil
}

// readChild reads a child of the service into obj: as this pass wrote it,
// or else from the cache.
func (r *Reconciler) readChild(ctx context.Context, p *pass, name string, obj client.Object) (bool, error) {
	if gvk, err := apiutil.GVKForObject(obj, r.scheme); err == nil {
		if u, ok := p.applied[childID{gvk: gvk, name: name}]; ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
				return false, fmt.Errorf("convert %s %s: %w", gvk.Kind, name, err)
			}
			return true, nil
		}
	}
	return r.getOptional(ctx, types.NamespacedName{Namespace: p.svc.Namespace, Name: name}, obj)
}

func (r *Reconciler) getOptional(ctx context.Context, key types.NamespacedName, obj client.Object) (bool, error) {
	err := r.client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get %T %s: %w", obj, key, err)
	}
	return true, nil
}

// poolName is the InferencePool the service's route sends traffic to: the
// referenced one, or the managed one.
func poolName(svc *v1alpha2.LLMInferenceService, spec *v1alpha2.LLMInferenceServiceSpec) string {
	if ref := poolRef(spec); ref != "" {
		return ref
	}
	name, _ := naming.ChildName(svc.Name, "-inference-pool")
	return name
}

func poolRef(spec *v1alpha2.LLMInferenceServiceSpec) string {
	if r := spec.Router; r != nil && r.Scheduler != nil && r.Scheduler.Pool != nil && r.Scheduler.Pool.Ref != nil {
		return r.Scheduler.Pool.Ref.Name
	}
	return ""
}

// redecide explains the phase again once this pass created the route, so
// the status does not say the route is missing. The phase stays the one the
// route was rendered with.
func (r *Reconciler) redecide(p *pass, in migration.Input) {
	if in.Route != nil {
		return
	}
	name, err := naming.ChildName(p.svc.Name, "-kserve-route")
	if err != nil {
		return
	}
	u, ok := p.applied[childID{gvk: gvkHTTPRoute, name: name}]
	if !ok {
		return
	}
	in.Route = &gatewayv1.HTTPRoute{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, in.Route); err != nil {
		return
	}
	if d := migration.Decide(in); d.Phase == p.decision.Phase {
		p.decision = d
	}
}

// classify finds each child's kind and returns the CRDs that are missing
// for the kinds rendered.
func (r *Reconciler) classify(p *pass) []kind {
	var missing []kind
	p.kinds = make([]kind, len(p.children))
	for i, u := range p.children {
		k, ok := kindOf(u.GroupVersionKind())
		if !ok {
			// The engine renders nothing else; a new kind must be added to
			// childKinds before it can be applied and pruned.
			k = kind{gvk: u.GroupVersionKind(), crd: "unknown kind " + u.GroupVersionKind().String()}
		}
		p.kinds[i] = k
		if !r.kinds.has(k) && !slices.ContainsFunc(missing, func(m kind) bool { return m.crd == k.crd }) {
			missing = append(missing, k)
		}
	}
	return missing
}

// applyAll applies every child in order. It goes on after a failure so one
// bad child does not hold back the rest, and reports the failures.
//
// The children go in three waves, in the engine's order: what others refer
// to (RBAC, Services), then the workloads, then the pools and the route.
// Within a wave they are applied concurrently; a new service's writes wait
// on the API server, not on each other.
func (r *Reconciler) applyAll(ctx context.Context, p *pass) error {
	errs := make([]error, len(p.children))
	responses := make([]*unstructured.Unstructured, len(p.children))
	for _, wave := range waves(p.kinds) {
		var wg sync.WaitGroup
		for _, i := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, k := p.children[i], p.kinds[i]
				if errs[i] = claim(u, p.svc, k); errs[i] != nil {
					return
				}
				wrote, err := r.applyChild(ctx, p.svc, u, k)
				if errs[i] = err; err == nil && wrote {
					responses[i] = u
				}
			}()
		}
		wg.Wait()
	}
	workloadFailed := false
	for i, u := range responses {
		if u != nil {
			if p.applied == nil {
				p.applied = map[childID]*unstructured.Unstructured{}
			}
			p.applied[childID{gvk: p.kinds[i].gvk, name: u.GetName()}] = u
		}
		workloadFailed = workloadFailed || (errs[i] != nil && p.kinds[i].workload)
	}
	err := errors.Join(errs...)
	if err != nil {
		p.failed(workloadFailed, err)
	}
	return err
}

// waves groups the children's indexes: first those no other child waits
// on the others for, then the workloads, then the pools and routes.
func waves(kinds []kind) [][]int {
	out := make([][]int, 3)
	for i, k := range kinds {
		switch k.gvk {
		case gvkDeployment, gvkLWS:
			out[1] = append(out[1], i)
		case gvkPoolV1, gvkPoolV1alpha2, gvkHTTPRoute:
			out[2] = append(out[2], i)
		default:
			out[0] = append(out[0], i)
		}
	}
	return out
}

// ensureTLS keeps the self-signed serving secret the presets mount, with
// every Service of the service among its names, and deletes it when the
// service has no Services (stopped) or another certificate mode is on.
func (r *Reconciler) ensureTLS(ctx context.Context, p *pass) (time.Duration, error) {
	name, err := naming.ChildName(p.svc.Name, "-kserve-self-signed-certs")
	if err != nil {
		return 0, err
	}
	key := types.NamespacedName{Namespace: p.svc.Namespace, Name: name}
	dnsNames := serviceNames(p)
	if r.authority == nil || len(dnsNames) == 0 {
		return 0, r.deleteOwnedSecret(ctx, p.svc, key)
	}
	owner := ownerReference(p.svc)
	res, err := r.authority.EnsureServingSecret(ctx, r.client, key, dnsNames, &owner, p.now)
	if err != nil {
		return 0, fmt.Errorf("serving certificate secret %s: %w", key, err)
	}
	return res.RequeueAfter(p.now), nil
}

// serviceNames are the DNS names of every Service the service renders, for
// the serving certificate, with localhost for probes and sidecars.
func serviceNames(p *pass) []string {
	var names []string
	for _, u := range p.children {
		if u.GroupVersionKind() != gvkService {
			continue
		}
		n, ns := u.GetName(), u.GetNamespace()
		names = append(names, n, n+"."+ns, n+"."+ns+".svc", n+"."+ns+".svc.cluster.local")
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return append([]string{"localhost", "127.0.0.1"}, slices.Compact(names)...)
}

func (r *Reconciler) deleteOwnedSecret(ctx context.Context, svc *v1alpha2.LLMInferenceService, key types.NamespacedName) error {
	k := kind{gvk: gvkSecret}
	s := k.newObject()
	if found, err := r.getOptional(ctx, key, s); err != nil || !found {
		return err
	}
	if !controls(svc, s, k) {
		return nil
	}
	return r.deleteChild(ctx, s, k)
}

// moveWeights is the static mode's only write: the route Helm made gets the
// weights of the phase.
func (r *Reconciler) moveWeights(ctx context.Context, p *pass) error {
	name, err := naming.ChildName(p.svc.Name, "-kserve-route")
	if err != nil || !r.kinds.hasCRD(crdHTTPRoute) {
		return err
	}
	rt := &gatewayv1.HTTPRoute{}
	found, err := r.getOptional(ctx, types.NamespacedName{Namespace: p.svc.Namespace, Name: name}, rt)
	if err != nil || !found {
		return err
	}
	if _, err := migration.ApplyWeights(ctx, r.client, rt, p.decision.Phase); err != nil {
		p.failed(false, err)
		return err
	}
	return nil
}

// finalize deletes the cluster-scoped children and lets the service go.
// Namespaced children go with it through their owner references.
func (r *Reconciler) finalize(ctx context.Context, svc *v1alpha2.LLMInferenceService) error {
	phases.forget(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}.String())
	if !controllerutil.ContainsFinalizer(svc, Finalizer) {
		return nil
	}
	for _, k := range childKinds {
		if k.clusterScoped {
			if err := r.pruneFrom(ctx, r.apiReader, false, svc, k, nil); err != nil {
				return err
			}
		}
	}
	patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(svc, Finalizer)
	if err := r.client.Patch(ctx, svc, patch, client.FieldOwner(FieldManager)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer from LLMInferenceService %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// writeStatus patches the status when it changed, and only then.
func (r *Reconciler) writeStatus(ctx context.Context, p *pass) error {
	p.status.Conditions = p.conds.sorted()
	if p.settled {
		p.status.ObservedGeneration = p.svc.Generation
	}
	key := types.NamespacedName{Namespace: p.svc.Namespace, Name: p.svc.Name}.String()
	from := phaseNone
	if ip := p.svc.Status.InferencePool; ip != nil {
		from = ip.MigrationPhase
	}
	to := phaseNone
	if ip := p.status.InferencePool; ip != nil {
		to = ip.MigrationPhase
	}
	phases.record(key, from, to)
	if equality.Semantic.DeepEqual(p.svc.Status, p.status) {
		return nil
	}
	base := p.svc.DeepCopy()
	p.svc.Status = p.status
	if err := r.client.Status().Patch(ctx, p.svc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("patch status of LLMInferenceService %s: %w", key, err)
	}
	return nil
}

// renderFailed records a spec that cannot be rendered: nothing is applied
// or deleted until it is fixed.
func (p *pass) renderFailed(err error) {
	p.conds.set(v1alpha2.ConditionPresetsCombined, "False", ReasonCombineBaseError, err.Error())
	p.conds.set(v1alpha2.ConditionReady, "False", ReasonCombineBaseError, err.Error())
	p.settled = true
}

// crdMissing records kinds the service needs whose CRDs are not served;
// nothing is applied until they are.
func (p *pass) crdMissing(missing []kind) {
	var workload, router []string
	for _, k := range missing {
		msg := fmt.Sprintf("the CustomResourceDefinition %s (%s) is not installed or not established; reconciling resumes when it is", k.crd, k.gvk.GroupVersion())
		if k.workload {
			workload = append(workload, msg)
		} else {
			router = append(router, msg)
		}
	}
	if len(workload) > 0 {
		p.conds.set(v1alpha2.ConditionWorkloadsReady, "False", ReasonCRDMissing, strings.Join(workload, "; "))
	}
	if len(router) > 0 {
		p.conds.set(v1alpha2.ConditionRouterReady, "False", ReasonCRDMissing, strings.Join(router, "; "))
	}
	p.conds.ready()
	p.settled = true
}

// failed records an error writing children.
func (p *pass) failed(workload bool, err error) {
	t := v1alpha2.ConditionRouterReady
	if workload {
		t = v1alpha2.ConditionWorkloadsReady
	}
	p.conds.set(t, "False", ReasonReconcileError, err.Error())
	p.conds.ready()
}

// notControlledRetry is how often a service whose child's name is taken
// looks again.
const notControlledRetry = 30 * time.Second

// onlyNotControlled reports whether every error joined in err says a
// child's name is taken.
func onlyNotControlled(err error) bool {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var nc *notControlledError
		if !errors.As(e, &nc) {
			return false
		}
	}
	return true
}

func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	default:
		return min(a, b)
	}
}
