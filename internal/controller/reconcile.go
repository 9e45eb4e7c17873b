package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/internal/migration"
)

// Reconciler reconciles LLMInferenceServices.
type Reconciler struct {
	// client reads through a freshReader: from the cache, or from the API
	// server while the kind's cache is behind it.
	client client.Client
	// apiReader reads from the API server, within the read limit, what
	// the cache does not hold.
	apiReader client.Reader
	// shadows reads Istio's Services of InferencePools (scope.go), as
	// client does.
	shadows client.Reader
	// owners reads from the API server, without the read limit, who
	// holds a child's name before the child is first applied
	// (checkUncached).
	owners client.Reader
	// indexer adds the cache's field indexes, and tells client how to
	// filter by them what the API server lists.
	indexer   client.FieldIndexer
	scheme    *runtime.Scheme
	opts      Options
	images    map[string]string
	presets   *presetCache
	kinds     *availability
	authority *certs.Authority
	// tiers reads the MaaS tier list; nil when MaaS is off.
	tiers *tierSource
	// recorder records events on services.
	recorder record.EventRecorder
	// requeue takes services to reconcile again, e.g. when a CRD appears.
	requeue chan event.GenericEvent
	// published remembers the CA bundle Secrets and ConfigMaps known to
	// hold the bundle (publishCA), read from the API server.
	published publishedCA
	// verified remembers the children found up to date (applyChild).
	verified verifiedChildren
	// writes remembers the controller's own last write to each service
	// until the cache has seen it.
	writes ownWrites
}

// pass is one reconcile of one service.
type pass struct {
	svc   *v1alpha2.LLMInferenceService
	now   time.Time
	conds *conditions
	// plan is the service merged with its presets, its children named: the
	// engine's, before the phase is decided.
	plan *engine.Plan
	// res is what the engine built for the decided phase.
	res      *engine.Result
	decision migration.Decision
	children []*unstructured.Unstructured
	kinds    []kind
	// applied holds the children written in this pass as the API server
	// returned them: newer than the cache, which has not seen them yet.
	applied map[childID]*unstructured.Unstructured
	// scalers are the autoscalers of the service's workloads.
	scalers []scaler
	status  v1alpha2.LLMInferenceServiceStatus
	// settled is true when the pass reached a result for this generation,
	// so observedGeneration may move on.
	settled bool
	// accessErr says what is wrong with the service's MaaS tiers
	// (accessReason: a bad annotation or tier list); what it does not
	// grant is not bound.
	accessErr    error
	accessReason string
	// istioGateways are the route parents that exist and are Istio's
	// (gatewayTLS): where the CA bundle Secret goes.
	istioGateways []types.NamespacedName
	// routeWithheld says why the managed route is not applied
	// (withholdRoute), with routeWithheldReason; empty when it is.
	routeWithheld, routeWithheldReason string
	// maasWithheld says why the MaaS route is not applied
	// (withholdMaaSRoute); empty when it is, or there is none.
	maasWithheld string
}

// Reconcile brings one service's children and status in line with its
// spec. It does the same whatever the event.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if len(r.opts.WatchNamespaces) > 0 && !slices.Contains(r.opts.WatchNamespaces, req.Namespace) {
		return ctrl.Result{}, nil
	}
	svc, err := r.getService(ctx, req.NamespacedName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			phases.forget(req.String())
			return ctrl.Result{}, r.pruneOrphans(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, fmt.Errorf("get LLMInferenceService %s: %w", req.NamespacedName, err)
	}
	if !svc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, svc)
	}
	if err := r.dropFinalizer(ctx, svc); err != nil {
		return ctrl.Result{}, err
	}
	p := &pass{svc: svc, now: r.opts.Now(), conds: newConditions(svc, r.opts.Now()), status: *svc.Status.DeepCopy()}
	dropKServeStatus(&p.status)
	requeue, err := r.sync(ctx, p)
	if serr := r.writeStatus(ctx, p); serr != nil {
		if err == nil && apierrors.IsConflict(serr) {
			// Someone wrote the service after the read this pass began
			// with: an expected race, not a failure. Look again with a
			// read from the API server; no error is logged.
			r.writes.expect(req.NamespacedName, "")
			ctrl.LoggerFrom(ctx).V(1).Info("status write conflicted; reconciling again", "error", serr.Error())
			return ctrl.Result{Requeue: true}, nil
		}
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
	opts := r.opts.engineOptions(r.images, "")
	if opts.Tiers, err = r.tiersFor(ctx, p); err != nil {
		return 0, err
	}
	opts.Monitoring = r.monitoring()
	// ScaledObjects are rendered once KEDA's CRD is served and watched.
	opts.WithoutKEDA = !r.kinds.hasCRD(crdScaledObject)
	opts.ConfigMaps = r.configMaps(ctx)
	if p.plan, err = engine.Prepare(ctx, p.svc, catalog, opts); err != nil {
		p.renderFailed(err)
		return schedulerConfigRequeue(nil, err), r.dropRenamedClusterChildren(ctx, p.svc)
	}
	configRequeue := schedulerConfigRequeue(p.plan, nil)
	in, err := r.migrationInput(ctx, p)
	if err != nil {
		return 0, err
	}
	p.decision = migration.Decide(in)
	if poolRef(p.plan.Shape) != "" {
		// The routes name a referenced pool only where it exists.
		p.plan = p.plan.WithPoolRefGroups(in.PoolGroups())
	}
	if p.res, err = p.plan.Build(p.decision.Phase); err != nil {
		p.renderFailed(err)
		return 0, r.dropRenamedClusterChildren(ctx, p.svc)
	}
	// What tells the gateways to originate TLS depends on the gateways the
	// built route attaches to.
	tls, shadow, err := r.gatewayTLS(ctx, p)
	if err != nil {
		return 0, err
	}
	if tls != convention.GatewayTLSNone {
		if p.res, err = p.plan.WithPlatform(tls, shadow, opts.Monitoring).Build(p.decision.Phase); err != nil {
			p.renderFailed(err)
			return 0, r.dropRenamedClusterChildren(ctx, p.svc)
		}
	}
	// The fields accepted but not acted on, and a KV cache offloading the
	// presets' own connector keeps from vLLM: the webhook warns about the
	// first when the service is written, only render knows the second.
	if err := r.withholdRoute(ctx, p); err != nil {
		return 0, err
	}
	p.conds.set(v1alpha2.ConditionPresetsCombined, "True", ReasonCombined, strings.Join(p.plan.Warnings, "; "))
	p.status.AppliedConfigs = appliedConfigs(p.plan.Explanation.Layers)
	r.access(p)
	if p.children, err = p.res.Unstructured(); err != nil {
		return 0, err
	}
	if missing := r.classify(p); len(missing) > 0 {
		p.crdMissing(missing)
		return 0, nil
	}
	p.crdsPresent()
	if err := r.findScalers(ctx, p); err != nil {
		return 0, err
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
		return minPositive(minPositive(p.decision.RequeueAfter, certRequeue), configRequeue), r.observe(ctx, p)
	}
	if err := r.publishCA(ctx, p); err != nil {
		p.failed(false, err)
		if errors.Is(err, certs.ErrNotManaged) {
			// Someone else's object holds the bundle's name: it stays, and
			// its removal sends no event here.
			return notControlledRetry, nil
		}
		return 0, err
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
	return minPositive(minPositive(p.decision.RequeueAfter, certRequeue), configRequeue), nil
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
