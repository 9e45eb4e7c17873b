package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Uninstall clears what only the controller clears, for a cluster where it
// no longer runs (odh-serving uninstall, after helm uninstall odh-serving):
//
//   - KServe's finalizer, which earlier versions of odh-serving put on every
//     service, comes off each service that carries it; otherwise deleting
//     the service, or its namespace, would wait for a controller that is
//     gone;
//   - the cluster-scoped children (the endpoint pickers' and metrics
//     readers' ClusterRoleBindings) of services that are gone or being
//     deleted are deleted: no owner reference reaches them.
//
// The children of services that stay are kept: their pods still use them.
// It reports each change on out, goes on after a failure and returns every
// failure. Run while a controller runs, it does nothing the controller
// would not do itself.
func Uninstall(ctx context.Context, c client.Client, out io.Writer) error {
	services := &v1alpha2.LLMInferenceServiceList{}
	if err := c.List(ctx, services); err != nil {
		return fmt.Errorf("list LLMInferenceServices: %w", err)
	}
	var errs []error
	live := map[types.NamespacedName]types.UID{}
	for i := range services.Items {
		svc := &services.Items[i]
		key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
		if svc.DeletionTimestamp.IsZero() {
			live[key] = svc.UID
		}
		if !controllerutil.ContainsFinalizer(svc, Finalizer) {
			continue
		}
		patch := client.MergeFromWithOptions(svc.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(svc, Finalizer)
		err := c.Patch(ctx, svc, patch, client.FieldOwner(convention.FieldManager))
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("remove finalizer %s from LLMInferenceService %s: %w", Finalizer, key, err))
		default:
			fmt.Fprintf(out, "LLMInferenceService %s: removed finalizer %s\n", key, Finalizer)
		}
	}
	for _, k := range childKinds {
		if !k.clusterScoped {
			continue
		}
		list := k.newList()
		if err := c.List(ctx, list, client.MatchingLabels{convention.LabelPartOf: convention.PartOf}); err != nil {
			errs = append(errs, fmt.Errorf("list %ss labelled %s=%s: %w", k.gvk.Kind, convention.LabelPartOf, convention.PartOf, err))
			continue
		}
		err := meta.EachListItem(list, func(o runtime.Object) error {
			obj, ok := o.(client.Object)
			if !ok {
				return nil
			}
			owner, uid := obj.GetAnnotations()[AnnotationOwner], obj.GetAnnotations()[AnnotationOwnerUID]
			ns, name, found := strings.Cut(owner, "/")
			if !found || (live[types.NamespacedName{Namespace: ns, Name: name}] == types.UID(uid) && uid != "") {
				return nil // not the controller's, or its service stays
			}
			objUID := obj.GetUID()
			err := c.Delete(ctx, obj, client.Preconditions{UID: &objUID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("delete %s %s of LLMInferenceService %s: %w", k.gvk.Kind, obj.GetName(), owner, err))
				return nil
			}
			fmt.Fprintf(out, "%s %s: deleted (LLMInferenceService %s is gone)\n", k.gvk.Kind, obj.GetName(), owner)
			return nil
		})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
