package simdataplane

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// setupWorkloads runs a controller, named name, that calls report with
// every selected workload of T's kind that exists.
func setupWorkloads[T client.Object](d *DataPlane, name string, newObj func() T, report func(context.Context, T) error) error {
	return builder.ControllerManagedBy(d.mgr).Named(name).
		For(newObj(), builder.WithPredicates(predicate.NewPredicateFuncs(d.selected))).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			obj := newObj()
			if err := d.client().Get(ctx, req.NamespacedName, obj); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			if !d.selected(obj) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, report(ctx, obj)
		}))
}

func (d *DataPlane) setupLWS() error {
	return setupWorkloads(d, "simulated-leaderworkersets", func() *lwsv1.LeaderWorkerSet { return &lwsv1.LeaderWorkerSet{} }, d.reportLWS)
}

// reportLWS reports every group of a LeaderWorkerSet ready, as the LWS
// operator would once leader and worker Pods run. The operator does not run
// here (docs/demo.md says why), so no StatefulSet or Pod of it exists.
func (d *DataPlane) reportLWS(ctx context.Context, lws *lwsv1.LeaderWorkerSet) error {
	key := client.ObjectKeyFromObject(lws)
	n := ptr.Deref(lws.Spec.Replicas, 1)
	size := ptr.Deref(lws.Spec.LeaderWorkerTemplate.Size, 1)
	status := lws.Status.DeepCopy()
	status.Replicas, status.ReadyReplicas, status.UpdatedReplicas = n, n, n
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: string(lwsv1.LeaderWorkerSetAvailable), Status: metav1.ConditionTrue, ObservedGeneration: lws.Generation,
		Reason: "AllGroupsReady", Message: "All replicas are ready (simulated: no Pod runs)",
	})
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: string(lwsv1.LeaderWorkerSetProgressing), Status: metav1.ConditionFalse, ObservedGeneration: lws.Generation,
		Reason: "AllGroupsReady", Message: "All replicas are ready (simulated)",
	})
	if wrote, err := writeStatus(ctx, d, lws, &lws.Status, *status, "report LeaderWorkerSet "+key.String()+" available"); err != nil || !wrote {
		return err
	}
	d.logf("LeaderWorkerSet %s Available: %d/%d groups of %d pods ready (generation %d)", key, n, n, size, lws.Generation)
	return nil
}
