package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

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

// poolRef is the InferencePool spec.router.scheduler.pool.ref names, or
// "" when the pool is managed.
func poolRef(spec *v1alpha2.LLMInferenceServiceSpec) string {
	if r := spec.Router; r != nil && r.Scheduler != nil && r.Scheduler.Pool != nil && r.Scheduler.Pool.Ref != nil {
		return r.Scheduler.Pool.Ref.Name
	}
	return ""
}
