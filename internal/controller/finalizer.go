package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Finalizer is KServe's finalizer, which earlier versions of odh-serving
// put on every service. The controller no longer adds it: a service must
// never outlive the controller's uninstall (its deletion, and its
// namespace's, would hang). It takes it off the services that carry it,
// and deletes a gone service's cluster-scoped children itself
// (pruneOrphans).
const Finalizer = "serving.kserve.io/llmisvc-finalizer"

// dropFinalizer takes the finalizer off a live service that carries it.
func (r *Reconciler) dropFinalizer(ctx context.Context, svc *v1alpha2.LLMInferenceService) error {
	if !controllerutil.ContainsFinalizer(svc, Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(svc, Finalizer)
	if err := r.client.Patch(ctx, svc, patch, client.FieldOwner(convention.FieldManager)); err != nil {
		return fmt.Errorf("remove finalizer %s from LLMInferenceService %s/%s: %w", Finalizer, svc.Namespace, svc.Name, err)
	}
	r.writes.wrote(svc)
	return nil
}

// finalize lets a service that is being deleted go: its cluster-scoped
// children are deleted, and the finalizer, if an earlier version put it
// there, is removed. Namespaced children go with it through their owner
// references.
func (r *Reconciler) finalize(ctx context.Context, svc *v1alpha2.LLMInferenceService) error {
	phases.forget(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}.String())
	if err := r.pruneOrphans(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}); err != nil {
		return err
	}
	if !controllerutil.ContainsFinalizer(svc, Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(svc, Finalizer)
	if err := r.client.Patch(ctx, svc, patch, client.FieldOwner(convention.FieldManager)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer from LLMInferenceService %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// pruneOrphans deletes the cluster-scoped children of the service key,
// which is gone or going. Nothing else reaches them: no owner reference
// can point from a cluster-scoped object to a namespaced one. The children
// carry the service's name as a label and its namespace/name in
// AnnotationOwner; they are read from the API server, as one created just
// before may not be in the cache yet. In static mode Helm made them and
// deletes them.
//
// It runs when the service is deleted and, through the watch of the
// cluster-scoped kinds (whose first list maps every child to its service),
// for each child whose service went while no controller ran.
func (r *Reconciler) pruneOrphans(ctx context.Context, key types.NamespacedName) error {
	if r.opts.StaticMode {
		return nil
	}
	for _, k := range childKinds {
		if !k.clusterScoped {
			continue
		}
		list := k.newList()
		if err := r.apiReader.List(ctx, list, client.MatchingLabels{convention.LabelPartOf: convention.PartOf, convention.LabelName: key.Name}); err != nil {
			return fmt.Errorf("list %s children of %s: %w", k.gvk.Kind, key, err)
		}
		err := meta.EachListItem(list, func(o runtime.Object) error {
			obj, ok := o.(client.Object)
			if !ok || obj.GetAnnotations()[AnnotationOwner] != key.String() {
				return nil
			}
			return r.deleteChild(ctx, obj, k)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
