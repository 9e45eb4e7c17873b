package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// HandoverFieldManager is the field manager that holds a workload's
// spec.replicas for a moment while the controller gives it up to an
// autoscaler.
//
// Server-side apply removes a field that its only manager stops applying:
// had the controller simply dropped spec.replicas, a Deployment or
// LeaderWorkerSet it alone scaled so far would fall back to the default of
// one replica. So, before the first apply without the field, the live count
// is applied under this manager too (not forced: if the autoscaler holds
// the field by then, that conflict is the answer wanted), and the field
// keeps its value when the controller lets go. The autoscaler's next scale
// takes it from this manager. This is the hand-over the Kubernetes
// server-side apply documentation describes under "Transferring ownership".
const HandoverFieldManager = "odh-serving-handover"

// crdScaledObject is KEDA's ScaledObject CRD.
const crdScaledObject = "scaledobjects.keda.sh"

var (
	gvkHPA          = autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler")
	gvkScaledObject = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}
)

// indexScaleTarget indexes HorizontalPodAutoscalers and ScaledObjects by
// the workload they scale (scaleTargetKey), so a service finds the
// autoscalers of its workloads without listing the namespace's.
const indexScaleTarget = "odh-serving.scaleTarget"

// scaleTargetKey is the index key of a scale target: group/Kind/name.
func scaleTargetKey(group, kind, name string) string { return group + "/" + kind + "/" + name }

// scaleTarget returns the group, kind and name of the workload an
// HorizontalPodAutoscaler or a ScaledObject scales. A ScaledObject's
// target defaults, as KEDA's does, to an apps/v1 Deployment.
func scaleTarget(obj client.Object) (schema.GroupKind, string, bool) {
	var apiVersion, kind, name string
	switch o := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		apiVersion, kind, name = o.Spec.ScaleTargetRef.APIVersion, o.Spec.ScaleTargetRef.Kind, o.Spec.ScaleTargetRef.Name
	case *unstructured.Unstructured:
		ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "scaleTargetRef")
		apiVersion, kind, name = ref["apiVersion"], ref["kind"], ref["name"]
		if apiVersion == "" {
			apiVersion = appsv1.SchemeGroupVersion.String()
		}
		if kind == "" {
			kind = "Deployment"
		}
	default:
		return schema.GroupKind{}, "", false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" || name == "" {
		return schema.GroupKind{}, "", false
	}
	return schema.GroupKind{Group: gv.Group, Kind: kind}, name, true
}

// indexScalers indexes the objects of an autoscaler kind (obj is an empty
// one) by their scale target.
func indexScalers(ctx context.Context, indexer client.FieldIndexer, obj client.Object) error {
	return indexer.IndexField(ctx, obj, indexScaleTarget, func(o client.Object) []string {
		if gk, name, ok := scaleTarget(o); ok {
			return []string{scaleTargetKey(gk.Group, gk.Kind, name)}
		}
		return nil
	})
}

// scalerKinds are the autoscaler kinds usable now: HPAs always, KEDA's
// ScaledObjects once their CRD is served.
func (r *Reconciler) scalerKinds() []kind {
	out := []kind{{gvk: gvkHPA}}
	if r.kinds.hasCRD(crdScaledObject) {
		out = append(out, kind{gvk: gvkScaledObject, crd: crdScaledObject})
	}
	return out
}

// scalersOf returns the autoscalers (HPAs, then ScaledObjects) in namespace
// that scale the workload gvk/name, from the cache's index.
func (r *Reconciler) scalersOf(ctx context.Context, namespace string, gvk schema.GroupVersionKind, name string) ([]client.Object, error) {
	var out []client.Object
	for _, k := range r.scalerKinds() {
		list := k.newList()
		if err := r.client.List(ctx, list, client.InNamespace(namespace),
			client.MatchingFields{indexScaleTarget: scaleTargetKey(gvk.Group, gvk.Kind, name)}); err != nil {
			return nil, fmt.Errorf("list the %ss of %s %s/%s: %w", k.gvk.Kind, gvk.Kind, namespace, name, err)
		}
		switch l := list.(type) {
		case *autoscalingv2.HorizontalPodAutoscalerList:
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
		case *unstructured.UnstructuredList:
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
		}
	}
	return out, nil
}

// findScalers looks up the autoscalers of each workload the service
// renders, for the status, and takes spec.replicas out of the desired
// form of every workload one of them scales: the replicas are theirs. A
// workload the engine rendered without replicas (the service sets
// scaling) is left to its autoscaler the same way.
func (r *Reconciler) findScalers(ctx context.Context, p *pass) error {
	p.scalers = nil
	for i, u := range p.children {
		if !p.kinds[i].workload {
			continue
		}
		found, err := r.scalersOf(ctx, p.svc.Namespace, p.kinds[i].gvk, u.GetName())
		if err != nil {
			return err
		}
		for _, s := range found {
			p.scalers = append(p.scalers, scaler{obj: s, target: childID{gvk: p.kinds[i].gvk, name: u.GetName()}})
		}
		if len(found) == 0 {
			continue
		}
		// A workload made for the first time starts at the spec's count,
		// raised to the autoscalers' minimum, and is handed over at the
		// next reconcile: an autoscaler installed with its service (Helm
		// creates it first) would otherwise find one replica.
		live := p.kinds[i].newObject()
		exists, err := r.getOptional(ctx, types.NamespacedName{Namespace: p.svc.Namespace, Name: u.GetName()}, live)
		if err != nil {
			return err
		}
		if exists {
			unstructured.RemoveNestedField(u.Object, "spec", "replicas")
			continue
		}
		replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		for _, s := range found {
			if hpa, ok := s.(*autoscalingv2.HorizontalPodAutoscaler); ok && hpa.Spec.MinReplicas != nil {
				replicas = max(replicas, int64(*hpa.Spec.MinReplicas))
			}
		}
		if replicas > 0 {
			if err := unstructured.SetNestedField(u.Object, replicas, "spec", "replicas"); err != nil {
				return fmt.Errorf("set the first replicas of %s %s: %w", p.kinds[i].gvk.Kind, u.GetName(), err)
			}
		}
	}
	return nil
}

// scaler is an autoscaler of one of the service's workloads.
type scaler struct {
	obj    client.Object
	target childID
}

// leavesReplicas reports whether a desired workload leaves its replicas
// to someone else.
func leavesReplicas(u *unstructured.Unstructured, k kind) bool {
	if !k.workload {
		return false
	}
	_, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas")
	return !found
}

// handOverReplicas keeps the live replicas of a workload the controller
// is about to stop scaling (see HandoverFieldManager). It reads the
// workload from the API server, since the cache keeps no managed fields;
// it runs only before an apply, never in steady state.
func (r *Reconciler) handOverReplicas(ctx context.Context, key types.NamespacedName, k kind) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(k.gvk)
	if err := r.apiReader.Get(ctx, key, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get %s %s: %w", k.gvk.Kind, key, err)
	}
	replicas, found, err := unstructured.NestedInt64(live.Object, "spec", "replicas")
	if err != nil || !found || !ownsReplicas(live.GetManagedFields(), convention.FieldManager) {
		return nil
	}
	h := &unstructured.Unstructured{}
	h.SetGroupVersionKind(k.gvk)
	h.SetNamespace(key.Namespace)
	h.SetName(key.Name)
	if err := unstructured.SetNestedField(h.Object, replicas, "spec", "replicas"); err != nil {
		return fmt.Errorf("hand over the replicas of %s %s: %w", k.gvk.Kind, key, err)
	}
	err = r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(h), client.FieldOwner(HandoverFieldManager))
	switch {
	case apierrors.IsConflict(err):
		// The autoscaler changed the count since: the field is its own.
		return nil
	case err != nil:
		return fmt.Errorf("hand over the replicas of %s %s: %w", k.gvk.Kind, key, err)
	}
	ctrl.LoggerFrom(ctx).Info("handed a workload's replicas over to its autoscaler", "kind", k.gvk.Kind, "name", key.Name, "replicas", replicas)
	return nil
}

// ownsReplicas reports whether manager applied spec.replicas.
func ownsReplicas(fields []metav1.ManagedFieldsEntry, manager string) bool {
	for _, f := range fields {
		if f.Manager != manager || f.Operation != metav1.ManagedFieldsOperationApply || f.FieldsV1 == nil {
			continue
		}
		var set struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if err := json.Unmarshal(f.FieldsV1.Raw, &set); err == nil {
			if _, ok := set.Spec["f:replicas"]; ok {
				return true
			}
		}
	}
	return false
}

// forScaler maps an HPA or a ScaledObject to the service whose workload it
// scales (through the workload's owner), and to the service that renders
// it, if one does.
func (r *Reconciler) forScaler(ctx context.Context, obj client.Object) []reconcile.Request {
	q := requests{}
	r.owner(q, obj)
	gk, name, ok := scaleTarget(obj)
	if !ok {
		return q.list()
	}
	var w client.Object
	switch gk {
	case gvkDeployment.GroupKind():
		w = &appsv1.Deployment{}
	case gvkLWS.GroupKind():
		if r.kinds.hasCRD(crdLWS) {
			w = &lwsv1.LeaderWorkerSet{}
		}
	}
	if w == nil {
		return q.list()
	}
	if found, err := r.getOptional(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}, w); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "get the scale target of an autoscaler", "kind", gk.Kind, "name", name)
	} else if found {
		r.owner(q, w)
	}
	return q.list()
}

// autoscalerStatus reports the autoscalers of the service's workloads,
// sorted by target, kind and name. A ScaledObject reports the replicas of
// the HPA KEDA made for it (status.hpaName), which is not listed itself.
func (r *Reconciler) autoscalerStatus(ctx context.Context, p *pass) ([]v1alpha2.AutoscalerStatus, error) {
	kedaHPAs := map[string]bool{}
	for _, s := range p.scalers {
		if u, ok := s.obj.(*unstructured.Unstructured); ok {
			if name, _, _ := unstructured.NestedString(u.Object, "status", "hpaName"); name != "" {
				kedaHPAs[name] = true
			}
		}
	}
	var out []v1alpha2.AutoscalerStatus
	for _, s := range p.scalers {
		st := v1alpha2.AutoscalerStatus{Name: s.obj.GetName(), Target: v1alpha2.ScaleTarget{Kind: s.target.gvk.Kind, Name: s.target.name}}
		var hpa *autoscalingv2.HorizontalPodAutoscaler
		switch o := s.obj.(type) {
		case *autoscalingv2.HorizontalPodAutoscaler:
			if kedaHPAs[o.Name] {
				continue
			}
			st.Kind, hpa = gvkHPA.Kind, o
		case *unstructured.Unstructured:
			st.Kind = gvkScaledObject.Kind
			if name, _, _ := unstructured.NestedString(o.Object, "status", "hpaName"); name != "" {
				hpa = &autoscalingv2.HorizontalPodAutoscaler{}
				found, err := r.getOptional(ctx, types.NamespacedName{Namespace: o.GetNamespace(), Name: name}, hpa)
				if err != nil {
					return nil, err
				}
				if !found {
					hpa = nil
				}
			}
		}
		if hpa != nil && (len(hpa.Status.Conditions) > 0 || hpa.Status.CurrentReplicas > 0 || hpa.Status.DesiredReplicas > 0) {
			st.CurrentReplicas, st.DesiredReplicas = ptr.To(hpa.Status.CurrentReplicas), ptr.To(hpa.Status.DesiredReplicas)
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b v1alpha2.AutoscalerStatus) int {
		return cmp.Or(cmp.Compare(a.Target.Kind, b.Target.Kind), cmp.Compare(a.Target.Name, b.Target.Name),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// autoscalersCondition reports whether the actuators spec.scaling asks for
// are rendered (see ConditionAutoscalersReady).
func (p *pass) autoscalersCondition() {
	if len(p.res.Autoscalers) == 0 {
		p.conds.remove(ConditionAutoscalersReady)
		return
	}
	var withheld []string
	for _, a := range p.res.Autoscalers {
		if a.Withheld != "" {
			withheld = append(withheld, fmt.Sprintf("%s %s for %s %s: %s", a.Kind, a.Name, a.Target.Kind, a.Target.Name, a.Withheld))
		}
	}
	if len(withheld) > 0 {
		p.conds.set(ConditionAutoscalersReady, metav1.ConditionFalse, ReasonCRDMissing,
			"not rendered, so the workload keeps its current replicas: "+strings.Join(withheld, "; ")+
				"; reconciling resumes when the CustomResourceDefinition "+crdScaledObject+" is established")
		return
	}
	p.conds.set(ConditionAutoscalersReady, metav1.ConditionTrue, ReasonReady, "")
}
