package controller

import (
	"context"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/preset"
)

// Field indexes. Events on presets, Gateways, routes and pools are mapped
// to the services they concern through these, so one event reconciles the
// services it can change and no others.
const (
	// indexPresets indexes services by the presets they use: their
	// baseRefs and, without baseRefs, the well-known presets of their
	// shape. Services with baseRefs are also indexed under keyBaseRefs,
	// since their shape (and so their well-known presets) depends on what
	// the baseRefs hold when the event comes.
	indexPresets = "odh-serving.presets"
	keyBaseRefs  = "*baseRefs"
	// indexRouteRefs indexes services by the HTTPRoutes in route.http.refs.
	indexRouteRefs = "odh-serving.routeRefs"
	// indexGatewayRefs indexes services by the Gateways (namespace/name) in
	// gateway.refs.
	indexGatewayRefs = "odh-serving.gatewayRefs"
	// indexPoolRef indexes services by scheduler.pool.ref.
	indexPoolRef = "odh-serving.poolRef"
	// indexParentGateways indexes HTTPRoutes by the Gateways they attach to.
	indexParentGateways = "odh-serving.parentGateways"
	// indexChildOf indexes objects of the child kinds by the service their
	// labels name (app.kubernetes.io/name, with the part-of label), so the
	// label inventory reads a service's objects, not the namespace's.
	indexChildOf = "odh-serving.childOf"
)

// indexChildren indexes a child kind by the service its labels name.
func indexChildren(ctx context.Context, indexer client.FieldIndexer, k kind) error {
	return indexer.IndexField(ctx, k.newObject(), indexChildOf, func(o client.Object) []string {
		if l := o.GetLabels(); l[convention.LabelPartOf] == convention.PartOf && l[convention.LabelName] != "" {
			return []string{l[convention.LabelName]}
		}
		return nil
	})
}

func (r *Reconciler) indexServices(ctx context.Context, indexer client.FieldIndexer) error {
	svc := &v1alpha2.LLMInferenceService{}
	prefix := *r.opts.PresetPrefix
	for name, fn := range map[string]client.IndexerFunc{
		indexPresets: func(o client.Object) []string {
			s := o.(*v1alpha2.LLMInferenceService)
			if len(s.Spec.BaseRefs) > 0 {
				return append(baseRefNames(s), keyBaseRefs)
			}
			return preset.WellKnown(&s.Spec, prefix)
		},
		indexRouteRefs: func(o client.Object) []string {
			return routeRefs(&o.(*v1alpha2.LLMInferenceService).Spec)
		},
		indexGatewayRefs: func(o client.Object) []string {
			s := o.(*v1alpha2.LLMInferenceService)
			var out []string
			if rt := s.Spec.Router; rt != nil && rt.Gateway != nil {
				for _, ref := range rt.Gateway.Refs {
					ns := ref.Namespace
					if ns == "" {
						ns = s.Namespace
					}
					out = append(out, ns+"/"+ref.Name)
				}
			}
			return out
		},
		indexPublished: published,
		indexPoolRef: func(o client.Object) []string {
			if ref := poolRef(&o.(*v1alpha2.LLMInferenceService).Spec); ref != "" {
				return []string{ref}
			}
			return nil
		},
	} {
		if err := indexer.IndexField(ctx, svc, name, fn); err != nil {
			return err
		}
	}
	return nil
}

func baseRefNames(s *v1alpha2.LLMInferenceService) []string {
	out := make([]string, 0, len(s.Spec.BaseRefs))
	for _, ref := range s.Spec.BaseRefs {
		out = append(out, ref.Name)
	}
	return out
}

func indexRoutes(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &gatewayv1.HTTPRoute{}, indexParentGateways, func(o client.Object) []string {
		var out []string
		for _, k := range parentGateways(o.(*gatewayv1.HTTPRoute)) {
			out = append(out, k.String())
		}
		return out
	})
}

// servicesFor lists the services matching an index key, in namespace (all
// namespaces when empty).
func (r *Reconciler) servicesFor(ctx context.Context, namespace, index, key string) []v1alpha2.LLMInferenceService {
	list := &v1alpha2.LLMInferenceServiceList{}
	opts := []client.ListOption{client.MatchingFields{index: key}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.client.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list services by index", "index", index, "key", key)
		return nil
	}
	return list.Items
}

type requests map[types.NamespacedName]bool

func (q requests) add(ns, name string) { q[types.NamespacedName{Namespace: ns, Name: name}] = true }

func (q requests) addAll(items []v1alpha2.LLMInferenceService) {
	for i := range items {
		q.add(items[i].Namespace, items[i].Name)
	}
}

// owner adds the service obj is a child of: the one that controls it, or
// in static mode (Helm makes the children) the one its labels name.
func (r *Reconciler) owner(q requests, obj client.Object) {
	if r.opts.StaticMode {
		if l := obj.GetLabels(); l[convention.LabelPartOf] == convention.PartOf && l[convention.LabelName] != "" {
			q.add(obj.GetNamespace(), l[convention.LabelName])
		}
		return
	}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.Kind == "LLMInferenceService" &&
		strings.HasPrefix(ref.APIVersion, v1alpha2.GroupVersion.Group+"/") {
		q.add(obj.GetNamespace(), ref.Name)
	}
}

func (q requests) list() []reconcile.Request {
	out := make([]reconcile.Request, 0, len(q))
	for k := range q {
		out = append(out, reconcile.Request{NamespacedName: k})
	}
	slices.SortFunc(out, func(a, b reconcile.Request) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// forConfig maps a preset to the services that use it. A preset in the
// system namespace can be used from every namespace; one in another
// namespace only from its own.
func (r *Reconciler) forConfig(ctx context.Context, obj client.Object) []reconcile.Request {
	ns := obj.GetNamespace()
	if ns == r.opts.SystemNamespace {
		ns = ""
	}
	q := requests{}
	q.addAll(r.servicesFor(ctx, ns, indexPresets, obj.GetName()))
	if !r.wellKnown(obj.GetName()) {
		return q.list()
	}
	// Services with baseRefs: their shape, and so whether they use this
	// well-known preset, depends on their baseRefs as they are now.
	for _, s := range r.servicesFor(ctx, ns, indexPresets, keyBaseRefs) {
		catalog, err := r.presets.catalog(ctx, s.Namespace)
		if err != nil {
			q.add(s.Namespace, s.Name)
			continue
		}
		spec, err := engine.Shape(&s, catalog)
		if err != nil || slices.Contains(preset.WellKnown(spec, *r.opts.PresetPrefix), obj.GetName()) {
			q.add(s.Namespace, s.Name)
		}
	}
	return q.list()
}

func (r *Reconciler) wellKnown(name string) bool {
	rest, ok := strings.CutPrefix(name, *r.opts.PresetPrefix)
	return ok && slices.Contains(preset.WellKnownNames, rest)
}

// forGateway maps a Gateway to the services whose routes attach to it or
// that name it in gateway.refs.
func (r *Reconciler) forGateway(ctx context.Context, obj client.Object) []reconcile.Request {
	key := obj.GetNamespace() + "/" + obj.GetName()
	q := requests{}
	q.addAll(r.servicesFor(ctx, "", indexGatewayRefs, key))
	routes := &gatewayv1.HTTPRouteList{}
	if err := r.client.List(ctx, routes, client.MatchingFields{indexParentGateways: key}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list routes of gateway", "gateway", key)
		return q.list()
	}
	for i := range routes.Items {
		rt := &routes.Items[i]
		r.owner(q, rt)
		q.addAll(r.servicesFor(ctx, rt.Namespace, indexRouteRefs, rt.Name))
	}
	return q.list()
}

// forRoute maps an HTTPRoute to its owner and the services that name it.
func (r *Reconciler) forRoute(ctx context.Context, obj client.Object) []reconcile.Request {
	q := requests{}
	r.owner(q, obj)
	q.addAll(r.servicesFor(ctx, obj.GetNamespace(), indexRouteRefs, obj.GetName()))
	return q.list()
}

// forPool maps an InferencePool (either group) to its owner and the
// services that reference it.
func (r *Reconciler) forPool(ctx context.Context, obj client.Object) []reconcile.Request {
	q := requests{}
	r.owner(q, obj)
	q.addAll(r.servicesFor(ctx, obj.GetNamespace(), indexPoolRef, obj.GetName()))
	return q.list()
}

// forClusterScoped maps a cluster-scoped child to its service through the
// owner annotation.
func forClusterScoped(_ context.Context, obj client.Object) []reconcile.Request {
	ns, name, ok := strings.Cut(obj.GetAnnotations()[AnnotationOwner], "/")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
