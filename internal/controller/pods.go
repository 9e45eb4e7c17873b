package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Why a workload is not Ready, from its pods: the cache holds the pods of
// services' workloads (the engine's part-of label), stripped to what is
// read here (podTransform), and a pod's change reconciles its service
// only when what it says about readiness changed (podChanged).

// podCause is what one pod says about why it is not Ready: the cluster's
// reason and message, word for word, and where they come from. Empty for
// a Ready pod.
type podCause struct {
	ready bool
	// vague is a pod that is not Ready for no reason but starting: a
	// cause of another pod is told first.
	vague   bool
	where   string
	reason  string
	message string
}

// causeOf reads, in order: the scheduler's PodScheduled=False
// (Unschedulable), a container waiting for a reason other than being
// created (ImagePullBackOff, ErrImagePull, CrashLoopBackOff, …; init
// containers first), a container that terminated with an error, and the
// Ready condition (ContainersNotReady while a readiness probe fails).
func causeOf(p *corev1.Pod) podCause {
	var ready, scheduled *corev1.PodCondition
	for i := range p.Status.Conditions {
		switch c := &p.Status.Conditions[i]; c.Type {
		case corev1.PodReady:
			ready = c
		case corev1.PodScheduled:
			scheduled = c
		}
	}
	if ready != nil && ready.Status == corev1.ConditionTrue {
		return podCause{ready: true}
	}
	if scheduled != nil && scheduled.Status == corev1.ConditionFalse {
		return podCause{where: "not scheduled", reason: scheduled.Reason, message: scheduled.Message}
	}
	for _, list := range []struct {
		kind     string
		statuses []corev1.ContainerStatus
	}{{"init container", p.Status.InitContainerStatuses}, {"container", p.Status.ContainerStatuses}} {
		for _, cs := range list.statuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				return podCause{where: list.kind + " " + cs.Name + " waiting", reason: w.Reason, message: w.Message}
			}
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				return podCause{where: list.kind + " " + cs.Name + " terminated", reason: t.Reason, message: fmt.Sprintf("exit code %d: %s", t.ExitCode, t.Message)}
			}
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil && !cs.Ready && ready != nil {
			return podCause{where: "container " + cs.Name + " running, readiness probe failing", reason: ready.Reason, message: ready.Message}
		}
	}
	if ready != nil && ready.Reason != "" {
		return podCause{vague: true, where: "not ready", reason: ready.Reason, message: ready.Message}
	}
	return podCause{vague: true, where: "pending", reason: string(p.Status.Phase)}
}

// podsVerdict is a workload's verdict when its own (v) says it is not
// Ready: how many of its pods (those its selector picks, not being
// deleted) are not Ready, and the first cause by pod name (a pod that is
// only starting comes after one with a cause), with the cluster's reason
// as the condition's reason. With no pod not Ready, v stays as it is.
func podsVerdict(v verdict, kind, name string, pods []corev1.Pod) verdict {
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var first *podCause
	var firstPod string
	notReadyCount, total := 0, 0
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			continue
		}
		total++
		c := causeOf(&pods[i])
		if c.ready {
			continue
		}
		notReadyCount++
		if first == nil || (first.vague && !c.vague) {
			first, firstPod = &c, pods[i].Name
		}
	}
	if first == nil {
		return v
	}
	msg := fmt.Sprintf("%s %s: %d of %d pods not Ready; pod %s %s: %s", kind, name, notReadyCount, total, firstPod, first.where, first.reason)
	if first.message != "" {
		msg += ": " + first.message
	}
	return verdict{reason: orDefault(first.reason, v.reason), message: msg}
}

// workloadPods lists the cached pods of namespace that selector picks.
func (r *Reconciler) workloadPods(ctx context.Context, namespace string, selector *metav1.LabelSelector) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || sel.Empty() {
		return nil, err
	}
	list := &corev1.PodList{}
	if err := r.client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", namespace, err)
	}
	return list.Items, nil
}

// podTransform keeps of a pod what causeOf and the selectors read: its
// name, namespace, labels, deletion and status. The spec, annotations and
// owner references are dropped.
func podTransform(in any) (any, error) {
	p, ok := in.(*corev1.Pod)
	if !ok {
		return cacheTransform(in)
	}
	slim := &corev1.Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Labels: p.Labels, DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec: corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{
			Phase: p.Status.Phase, Conditions: p.Status.Conditions,
			InitContainerStatuses: p.Status.InitContainerStatuses, ContainerStatuses: p.Status.ContainerStatuses,
		},
	}
	return cacheTransform(slim)
}

// forPod maps a pod to its service by the engine's labels: its owner is
// a ReplicaSet, not the service.
func forPod(_ context.Context, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	if l[convention.LabelPartOf] != convention.PartOf || l[convention.LabelName] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: l[convention.LabelName]}}}
}

// podChanged passes a pod's creation and deletion, and an update that
// changes its readiness or its cause, which is what the status reports:
// kubelet heartbeats and the like reconcile nothing.
var podChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		return causeOf(o) != causeOf(n) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
	},
}
