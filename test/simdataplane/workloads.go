package simdataplane

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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

func (d *DataPlane) setupDeployments() error {
	return setupWorkloads(d, "simulated-deployments", func() *appsv1.Deployment { return &appsv1.Deployment{} }, d.reportDeployment)
}

// reportDeployment reports every replica of a Deployment ready and
// available, as the Deployment controller would once its Pods run.
func (d *DataPlane) reportDeployment(ctx context.Context, dep *appsv1.Deployment) error {
	key := client.ObjectKeyFromObject(dep)
	n := ptr.Deref(dep.Spec.Replicas, 1)
	status := dep.Status.DeepCopy()
	status.ObservedGeneration = dep.Generation
	status.Replicas, status.UpdatedReplicas, status.ReadyReplicas, status.AvailableReplicas = n, n, n, n
	status.UnavailableReplicas = 0
	setDeploymentCondition(status, appsv1.DeploymentAvailable, "MinimumReplicasAvailable", "Deployment has minimum availability (simulated: no Pod runs).")
	setDeploymentCondition(status, appsv1.DeploymentProgressing, "NewReplicaSetAvailable", "ReplicaSet is available (simulated).")
	if wrote, err := writeStatus(ctx, d, dep, &dep.Status, *status, "report Deployment "+key.String()+" available"); err != nil || !wrote {
		return err
	}
	d.logf("Deployment %s Available: %d/%d replicas ready (generation %d)", key, n, n, dep.Generation)
	return nil
}

// setDeploymentCondition sets a True condition, keeping its timestamps when
// nothing about it changed.
func setDeploymentCondition(status *appsv1.DeploymentStatus, kind appsv1.DeploymentConditionType, reason, message string) {
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != kind {
			continue
		}
		if c.Status == corev1.ConditionTrue && c.Reason == reason && c.Message == message {
			return
		}
		now := metav1.Now()
		if c.Status != corev1.ConditionTrue {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message, c.LastUpdateTime = corev1.ConditionTrue, reason, message, now
		return
	}
	now := metav1.Now()
	status.Conditions = append(status.Conditions, appsv1.DeploymentCondition{
		Type: kind, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastUpdateTime: now, LastTransitionTime: now,
	})
}

func (d *DataPlane) setupLWS() error {
	return setupWorkloads(d, "simulated-leaderworkersets", func() *lwsv1.LeaderWorkerSet { return &lwsv1.LeaderWorkerSet{} }, d.reportLWS)
}

// reportLWS reports every group of a LeaderWorkerSet ready, as the LWS
// operator would once leader and worker Pods run.
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
