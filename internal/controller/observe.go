package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// observe works out the status from the children in the cache.
func (r *Reconciler) observe(ctx context.Context, p *pass) error {
	p.settled = true
	if p.plan.Stopped {
		p.conds.remove(workloadConditions...)
		p.conds.remove(routerConditions...)
		msg := "the service is stopped (annotation " + convention.AnnotationStop + "); remove the annotation to start it"
		for _, t := range []string{v1alpha2.ConditionWorkloadsReady, v1alpha2.ConditionRouterReady, v1alpha2.ConditionReady} {
			p.conds.set(t, metav1.ConditionFalse, ReasonStopped, msg)
		}
		p.status.URL, p.status.Addresses, p.status.Autoscalers, p.status.Workloads = "", nil, nil, nil
		p.conds.remove(ConditionAutoscalersReady)
		r.migrationStatus(p)
		return nil
	}
	if err := r.workloads(ctx, p); err != nil {
		p.failed(true, err)
		return err
	}
	autoscalers, err := r.autoscalerStatus(ctx, p)
	if err != nil {
		p.failed(true, err)
		return err
	}
	p.status.Autoscalers = autoscalers
	p.autoscalersCondition()
	if err := r.router(ctx, p); err != nil {
		p.failed(false, err)
		return err
	}
	r.migrationStatus(p)
	p.conds.ready()
	return nil
}

// workloads sets the workload conditions from the children the engine
// built in each role.
func (r *Reconciler) workloads(ctx context.Context, p *pass) error {
	main, prefill := &appsv1.Deployment{}, &appsv1.Deployment{}
	mainLWS, prefillLWS := &lwsv1.LeaderWorkerSet{}, &lwsv1.LeaderWorkerSet{}
	for _, c := range []struct {
		condition, name string
		obj             client.Object
		judge           func() (verdict, error)
	}{
		{ConditionMainWorkloadReady, p.res.Named(engine.RoleMain), main, r.deploymentReadiness(ctx, main)},
		{ConditionWorkerWorkloadReady, p.res.Named(engine.RoleWorker), mainLWS, r.lwsReadiness(ctx, mainLWS)},
		{ConditionPrefillWorkloadReady, p.res.Named(engine.RolePrefill), prefill, r.deploymentReadiness(ctx, prefill)},
		{ConditionPrefillWorkerWorkloadReady, p.res.Named(engine.RolePrefillWorker), prefillLWS, r.lwsReadiness(ctx, prefillLWS)},
	} {
		if err := r.objectCondition(ctx, p, c.condition, c.name, c.obj, c.judge); err != nil {
			return err
		}
	}
	p.conds.sum(v1alpha2.ConditionWorkloadsReady, workloadConditions, ReasonReady)
	p.status.Workloads = &v1alpha2.WorkloadStatus{
		Primary: observedWorkload(p.res.Named(engine.RoleMain), main, p.res.Named(engine.RoleWorker), mainLWS),
		Prefill: observedWorkload(p.res.Named(engine.RolePrefill), prefill, p.res.Named(engine.RolePrefillWorker), prefillLWS),
	}
	if p.status.Workloads.Primary != nil {
		p.status.Workloads.Service = &corev1.TypedLocalObjectReference{Kind: "Service", Name: p.plan.Names.WorkloadService}
	}
	return nil
}

// observedWorkload is KServe's status entry of a workload: the
// LeaderWorkerSet lwsName when there is one, else the Deployment
// deployName, with the ready replicas of the object read into l or d.
// Neither name: nil.
func observedWorkload(deployName string, d *appsv1.Deployment, lwsName string, l *lwsv1.LeaderWorkerSet) *v1alpha2.ObservedWorkload {
	switch {
	case lwsName != "":
		return &v1alpha2.ObservedWorkload{
			TypedLocalObjectReference: corev1.TypedLocalObjectReference{APIGroup: ptr.To(lwsv1.GroupVersion.Group), Kind: "LeaderWorkerSet", Name: lwsName},
			ReadyReplicas:             readyReplicas(l, l.Status.ReadyReplicas),
		}
	case deployName != "":
		return observedDeployment(deployName, d)
	}
	return nil
}

// observedDeployment is the status entry of the Deployment name, read into d.
func observedDeployment(name string, d *appsv1.Deployment) *v1alpha2.ObservedWorkload {
	return &v1alpha2.ObservedWorkload{
		TypedLocalObjectReference: corev1.TypedLocalObjectReference{APIGroup: ptr.To(appsv1.GroupName), Kind: "Deployment", Name: name},
		ReadyReplicas:             readyReplicas(d, d.Status.ReadyReplicas),
	}
}

// readyReplicas is n for an object that was read, nil for one not there yet.
func readyReplicas(obj client.Object, n int32) *int32 {
	if obj.GetResourceVersion() == "" {
		return nil
	}
	return &n
}

// objectCondition sets condition t from the readiness of the child name,
// read into obj: Progressing while it is not in the cache yet. Without a
// name the condition does not apply and is removed.
func (r *Reconciler) objectCondition(ctx context.Context, p *pass, t, name string, obj client.Object, judge func() (verdict, error)) error {
	if name == "" {
		p.conds.remove(t)
		return nil
	}
	found, err := r.readChild(ctx, p, name, obj)
	if err != nil {
		return err
	}
	v := notReady(ReasonProgressing, "%s %s: not created yet", kindName(obj), name)
	if found {
		if v, err = judge(); err != nil {
			return err
		}
	}
	p.conds.setBool(t, v.ok, v.reason, v.message)
	return nil
}

// deploymentReadiness judges the Deployment read into d: its Available
// condition, and when that is not True, its pods (podsVerdict).
func (r *Reconciler) deploymentReadiness(ctx context.Context, d *appsv1.Deployment) func() (verdict, error) {
	return func() (verdict, error) {
		v := deploymentVerdict(d)
		if v.ok {
			return v, nil
		}
		pods, err := r.workloadPods(ctx, d.Namespace, d.Spec.Selector)
		if err != nil {
			return v, err
		}
		return podsVerdict(v, "Deployment", d.Name, pods), nil
	}
}

// lwsReadiness judges the LeaderWorkerSet read into l: its Available
// condition, and when that is not True, the pods of its groups.
func (r *Reconciler) lwsReadiness(ctx context.Context, l *lwsv1.LeaderWorkerSet) func() (verdict, error) {
	return func() (verdict, error) {
		v := lwsVerdict(l)
		if v.ok {
			return v, nil
		}
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{lwsv1.SetNameLabelKey: l.Name}}
		pods, err := r.workloadPods(ctx, l.Namespace, sel)
		if err != nil {
			return v, err
		}
		return podsVerdict(v, "LeaderWorkerSet", l.Name, pods), nil
	}
}

func kindName(obj client.Object) string {
	switch obj.(type) {
	case *lwsv1.LeaderWorkerSet:
		return "LeaderWorkerSet"
	default:
		return "Deployment"
	}
}

// migrationStatus records the pool in use and the migration phase.
func (r *Reconciler) migrationStatus(p *pass) {
	if !hasScheduler(p.plan.Shape) {
		p.conds.remove(ConditionInferencePoolMigrated)
		p.status.InferencePool = nil
		return
	}
	d := p.decision
	group := build.GroupPoolV1
	if d.Phase == convention.PhaseAlpha2 || d.Phase == convention.PhaseDual {
		group = build.GroupPoolV1alpha2
	}
	if rp := p.res.PoolRef; rp != nil && len(rp.Groups) == 1 {
		group = rp.Groups[0] // the one group the routes name the referenced pool in
	}
	p.status.InferencePool = &v1alpha2.InferencePoolStatus{Name: p.plan.Names.Pool, Group: group, MigrationPhase: string(d.Phase)}
	moved := d.Phase == convention.PhaseV1 || d.Phase == convention.PhaseRetired
	p.conds.setBool(ConditionInferencePoolMigrated, moved, orDefault(d.Reason, "Decided"), d.Message)
}
