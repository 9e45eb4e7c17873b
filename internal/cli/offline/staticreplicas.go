package offline

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// markScaled labels each workload rendered without spec.replicas (an
// autoscaler scales it) with the autoscaler's minimum,
// convention.LabelMinReplicas. Helm drops spec.replicas from a workload the
// upgrade that adds scaling renders without it, which would take it to one
// replica; the replicas webhook (internal/webhook) keeps the live count of
// the workloads so labelled instead, raised to the minimum.
func markScaled(children []*unstructured.Unstructured) {
	floors := map[string]int64{}
	for _, c := range children {
		var floor int64
		switch c.GetKind() {
		case "HorizontalPodAutoscaler":
			n, found, _ := unstructured.NestedInt64(c.Object, "spec", "minReplicas")
			floor = 1 // the HPA's default
			if found {
				floor = n
			}
		case "ScaledObject":
			floor, _, _ = unstructured.NestedInt64(c.Object, "spec", "minReplicaCount")
		default:
			continue
		}
		kind, _, _ := unstructured.NestedString(c.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(c.Object, "spec", "scaleTargetRef", "name")
		if kind == "" {
			kind = "Deployment" // a ScaledObject's default, as KEDA's
		}
		key := kind + "/" + name
		floors[key] = max(floors[key], floor)
	}
	for _, c := range children {
		if c.GetKind() != "Deployment" && c.GetKind() != "LeaderWorkerSet" {
			continue
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(c.Object, "spec", "replicas"); found {
			continue
		}
		floor, found := floors[c.GetKind()+"/"+c.GetName()]
		if !found {
			floor = 1 // spec.scaling's default minReplicas
		}
		labels := c.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[convention.LabelMinReplicas] = strconv.FormatInt(floor, 10)
		c.SetLabels(labels)
	}
}
