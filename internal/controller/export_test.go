package controller

import (
	"context"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// StartReconciler runs the controller as Run does, without the webhooks and
// the CRD lifecycle, and returns its service reconciler, for a benchmark
// that calls Reconcile itself. The manager runs until ctx is done; then
// its error is sent on the channel.
func StartReconciler(ctx context.Context, cfg *rest.Config, opts Options) (reconcile.Reconciler, <-chan error, error) {
	opts = opts.withDefaults()
	scheme, err := NewScheme()
	if err != nil {
		return nil, nil, err
	}
	opts.fresh = newFreshness(scheme)
	mgr, err := NewManager(ctx, cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	r, err := setup(ctx, mgr, opts)
	if err != nil {
		return nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return r, done, nil
}
