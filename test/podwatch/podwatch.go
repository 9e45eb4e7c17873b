package podwatch

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Follow calls apply with each pod sel picks in namespace (empty: every
// namespace) when it appears, when it changes and again every resync, and
// gone when it is deleted, until ctx ends; then it stops its informer and
// returns.
func Follow(ctx context.Context, cs kubernetes.Interface, namespace string, sel labels.Selector, resync time.Duration, apply, gone func(*corev1.Pod)) error {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, resync, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }))
	call := func(f func(*corev1.Pod), obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			f(pod)
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { call(apply, obj) },
		UpdateFunc: func(_, obj any) { call(apply, obj) },
		DeleteFunc: func(obj any) { call(gone, obj) },
	}); err != nil {
		return fmt.Errorf("watch pods %q: %w", sel, err)
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	return nil
}

// Ready says whether the pod's Ready condition is True.
func Ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
