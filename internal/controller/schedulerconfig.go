package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opendatahub-io/odh-serving/engine"
)

// A service whose endpoint picker reads its configuration from a ConfigMap
// (spec.router.scheduler.config.ref) is reconciled again after
// schedulerConfigRecheck, so an edit of the ConfigMap reaches the
// endpoint picker without a watch on every ConfigMap of the cluster; one
// that names a missing ConfigMap after schedulerConfigMissingRetry.
const (
	schedulerConfigRecheck      = 5 * time.Minute
	schedulerConfigMissingRetry = 30 * time.Second
)

// configMaps reads the ConfigMaps services name from the API server: the
// cache holds none (they are many), and only services that name one ask.
func (r *Reconciler) configMaps(ctx context.Context) engine.ConfigMapLookup {
	return func(namespace, name string) (map[string]string, bool, error) {
		cm := &corev1.ConfigMap{}
		err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cm)
		switch {
		case apierrors.IsNotFound(err):
			return nil, false, nil
		case err != nil:
			return nil, false, fmt.Errorf("get ConfigMap %s/%s: %w", namespace, name, err)
		}
		return cm.Data, true, nil
	}
}

// schedulerConfigRequeue is when to reconcile a service again for its
// scheduler ConfigMap: after a render error that names a missing one, or
// after a render that read one; 0 otherwise.
func schedulerConfigRequeue(plan *engine.Plan, renderErr error) time.Duration {
	switch {
	case errors.Is(renderErr, engine.ErrConfigMapNotFound):
		return schedulerConfigMissingRetry
	case renderErr == nil && plan != nil && plan.SchedulerConfigFrom != "":
		return schedulerConfigRecheck
	}
	return 0
}
