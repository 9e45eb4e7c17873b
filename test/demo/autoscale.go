package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// Step 12: an HPA on qwen's decode Deployment, which "scales" it to
// autoscaleReplicas. The HPA controller runs (kube-controller-manager), but
// there is no metrics server, so it cannot decide anything: the demo writes
// the scale and the HPA's status in its place, as the HPA controller would
// once it had metrics, under a field manager of the demo's own
// (demoScaleManager), so that nothing presents the demo's write as the HPA
// controller's. The real one, failing to get metrics, keeps the desired
// count, reports the current one and leaves the scale as it is, as
// odh-serving does.
const (
	autoscaleService  = "qwen"
	autoscaleReplicas = 4
	hpaName           = "qwen-hpa"
	// demoScaleManager is the field manager of the demo's write of the
	// scale, standing in for the HPA controller's decision; the HPA
	// controller itself writes as kube-controller-manager.
	demoScaleManager = "odh-serving-demo"
	// hpaControllerManager is the HPA controller's field manager.
	hpaControllerManager = "kube-controller-manager"
)

// 12. Scale one service with a simulated HPA and show the controller leave
// the count alone.
func (d *demo) autoscale(ctx context.Context) error {
	d.header(fmt.Sprintf("Autoscale %s with an HPA (the HPA controller runs, but with no metrics server the demo writes its decision: the scale)", autoscaleService))
	target, dep, err := d.decodeOf(ctx, autoscaleService)
	if err != nil {
		return err
	}
	d.out.ScaledBefore = ptrDeref(dep.Spec.Replicas)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: target.Namespace, Name: hpaName},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name},
			MinReplicas:    ptrTo(int32(1)), MaxReplicas: 8,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptrTo(int32(80))},
			}}},
		},
	}
	if err := d.c.Create(ctx, hpa); err != nil {
		return fmt.Errorf("create HorizontalPodAutoscaler %s/%s: %w", hpa.Namespace, hpa.Name, err)
	}
	d.say("kubectl autoscale deployment %s --min 1 --max 8 --cpu-percent 80  (HorizontalPodAutoscaler %s)", dep.Name, hpaName)
	err = d.poll(ctx, "the controller lets go of the Deployment's replicas", 100*time.Millisecond, func() (bool, error) {
		if err := d.c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, err
		}
		return !ownsReplicas(dep, "odh-serving"), nil
	})
	if err != nil {
		return err
	}
	d.say("the controller stopped applying spec.replicas and kept the count at %d (%s)", ptrDeref(dep.Spec.Replicas), replicasOwners(dep))

	// The scale carries the Deployment's resourceVersion, which
	// kube-controller-manager moves whenever it writes the Deployment's
	// status: a conflict is read again and retried, as the HPA
	// controller's next sync would.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &autoscalingv1.Scale{}
		if err := d.c.SubResource("scale").Get(ctx, dep, s); err != nil {
			return err
		}
		s.Spec.Replicas = autoscaleReplicas
		return d.c.SubResource("scale").Update(ctx, dep, client.WithSubResourceBody(s), client.FieldOwner(demoScaleManager))
	})
	if err != nil {
		return fmt.Errorf("scale Deployment %s: %w", dep.Name, err)
	}
	// The HPA controller writes this status too: a conflict means it did,
	// and the write is made again on what it wrote.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := d.c.Get(ctx, client.ObjectKeyFromObject(hpa), hpa); err != nil {
			return err
		}
		hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas, hpa.Status.LastScaleTime = d.out.ScaledBefore, autoscaleReplicas, ptrTo(metav1.Now())
		return d.c.Status().Update(ctx, hpa, client.FieldOwner(demoScaleManager))
	})
	if err != nil {
		return fmt.Errorf("status of HorizontalPodAutoscaler %s: %w", hpaName, err)
	}
	if err := d.c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		return err
	}
	generation := dep.Generation
	d.say("the demo wrote the HPA's decision, as the HPA controller would with metrics: %s scaled through the scale subresource %d -> %d replicas (the demo's write: field manager %s, not the HPA controller's %s), generation %d",
		dep.Name, d.out.ScaledBefore, autoscaleReplicas, demoScaleManager, hpaControllerManager, generation)

	// The HPA's status change reconciles the service: once its status
	// shows the HPA's counts, the controller has seen the scaled
	// Deployment, and left it alone.
	err = d.poll(ctx, "the service reports its HPA and the Deployment is ready at the new count", 200*time.Millisecond, func() (bool, error) {
		svc := &v1alpha2.LLMInferenceService{}
		if err := d.c.Get(ctx, client.ObjectKey{Namespace: target.Namespace, Name: target.Name}, svc); err != nil {
			return false, err
		}
		if err := d.c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, err
		}
		a := svc.Status.Autoscalers
		return len(a) == 1 && a[0].Name == hpaName && a[0].DesiredReplicas != nil && *a[0].DesiredReplicas == autoscaleReplicas &&
			dep.Status.ReadyReplicas == autoscaleReplicas, nil
	})
	if err != nil {
		return err
	}
	d.out.ScaledAfter, d.out.ScaledGenerationKept = ptrDeref(dep.Spec.Replicas), dep.Generation == generation
	d.out.ScaledReplicasOwners = replicasOwnerNames(dep)
	d.say("after the controller reconciled %s: Deployment %s at %d replicas, %d pods ready, generation %d (neither odh-serving nor the HPA controller wrote it since), %s",
		target, dep.Name, d.out.ScaledAfter, dep.Status.ReadyReplicas, dep.Generation, replicasOwners(dep))
	out, err := d.status(ctx)
	if err != nil {
		return err
	}
	d.block(out)
	return nil
}

// ownsReplicas reports whether manager owns the Deployment's spec.replicas.
func ownsReplicas(dep *appsv1.Deployment, manager string) bool {
	for _, f := range dep.ManagedFields {
		if f.Manager != manager || f.FieldsV1 == nil {
			continue
		}
		var set struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(f.FieldsV1.Raw, &set) == nil {
			if _, ok := set.Spec["f:replicas"]; ok {
				return true
			}
		}
	}
	return false
}

// replicasOwnerNames returns the field managers that own the Deployment's
// spec.replicas.
func replicasOwnerNames(dep *appsv1.Deployment) []string {
	var owners []string
	for _, f := range dep.ManagedFields {
		if ownsReplicas(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{f}}}, f.Manager) {
			owners = append(owners, f.Manager)
		}
	}
	return owners
}

// replicasOwners says who owns the Deployment's spec.replicas.
func replicasOwners(dep *appsv1.Deployment) string {
	return fmt.Sprintf("spec.replicas owned by %v", replicasOwnerNames(dep))
}
