package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Finalizer is on every service the controller manages, so that its
// cluster-scoped children, which no owner reference can reach, are deleted
// with it.
const Finalizer = "serving.kserve.io/llmisvc-finalizer"

// ensureFinalizer adds the finalizer to a service that lacks it (not in
// static mode, where Helm makes the children and deletes them).
func (r *Reconciler) ensureFinalizer(ctx context.Context, svc *v1alpha2.LLMInferenceService) error {
	if r.opts.StaticMode || controllerutil.ContainsFinalizer(svc, Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(svc, Finalizer)
	if err := r.client.Patch(ctx, svc, patch, client.FieldOwner(convention.FieldManager)); err != nil {
		return fmt.Errorf("add finalizer to LLMInferenceService %s/%s: %w", svc.Namespace, svc.Name, err)
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
	if err := r.client.Patch(ctx, svc, patch, client.FieldOwner(convention.FieldManager)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer from LLMInferenceService %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}
