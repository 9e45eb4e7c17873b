package security

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// capabilityAllowance lets the capabilities a shipped preset adds go beyond
// the restricted level (which allows adding only NET_BIND_SERVICE), with
// the reason.
type capabilityAllowance struct {
	// presets are the shipped presets (without the prefix) whose additions
	// are allowed; a capability added by any other layer is not.
	presets      []string
	capabilities []corev1.Capability
	reason       string
}

// allowedCapabilities is the only exception to the restricted level. Keep it
// in step with docs/security.md.
var allowedCapabilities = []capabilityAllowance{{
	presets:      []string{"config-llm-worker-data-parallel", "config-llm-decode-worker-data-parallel", "config-llm-prefill-worker-data-parallel"},
	capabilities: []corev1.Capability{"IPC_LOCK", "SYS_RAWIO", "NET_RAW"},
	reason: "data parallelism across nodes runs NCCL and the expert-parallel all-to-all over RDMA " +
		"(InfiniBand or RoCE): registering GPU and host buffers with the NIC pins (mlocks) them, which needs " +
		"IPC_LOCK; GPUDirect RDMA maps device memory with raw I/O (SYS_RAWIO); RoCE's raw Ethernet queue " +
		"pairs need NET_RAW. KServe's data-parallel presets add the same three",
}}

// allowedAdder reports whether layer (as render --explain names it) is one
// of the presets of a, under the default prefix in the system namespace.
func (a capabilityAllowance) allowedAdder(layer string) bool {
	for _, p := range a.presets {
		id := "opendatahub/kserve-" + p
		if layer == id || strings.HasPrefix(layer, id+" ") {
			return true
		}
	}
	return false
}

// workload is one pod template of a rendered object.
type workload struct {
	name string // source: Kind name (template)
	// service is the service's namespace/name.
	service string
	pod     corev1.PodTemplateSpec
}

// workloads returns the pod templates of the Deployments and
// LeaderWorkerSets in objs.
func workloads(t *testing.T, source string, objs []*unstructured.Unstructured) []workload {
	t.Helper()
	var out []workload
	for _, o := range objs {
		w := workload{name: fmt.Sprintf("%s: %s %s", source, o.GetKind(), o.GetName()),
			service: o.GetNamespace() + "/" + o.GetLabels()["app.kubernetes.io/name"]}
		switch o.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			fromUnstructured(t, o, &d)
			w.pod = d.Spec.Template
			out = append(out, w)
		case "LeaderWorkerSet":
			var l lwsv1.LeaderWorkerSet
			fromUnstructured(t, o, &l)
			if lt := l.Spec.LeaderWorkerTemplate.LeaderTemplate; lt != nil {
				leader := w
				leader.name += " (leader)"
				leader.pod = *lt
				out = append(out, leader)
			}
			w.name += " (worker)"
			w.pod = l.Spec.LeaderWorkerTemplate.WorkerTemplate
			out = append(out, w)
		case "Pod", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicaSet":
			t.Errorf("%s: a workload kind this test does not check yet", w.name)
		}
	}
	return out
}

func fromUnstructured(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// TestPodSecurityRestricted evaluates every workload rendered from every
// golden input with the Pod Security Admission library at level
// restricted, latest version. The only exception is allowedCapabilities:
// those capabilities are taken out of a copy of the pod before it is
// evaluated, and everything else must pass.
func TestPodSecurityRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks())
	if err != nil {
		t.Fatal(err)
	}
	level := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	used := make([]int, len(allowedCapabilities))
	count := 0
	for _, r := range renderGolden(t) {
		for _, w := range workloads(t, r.source, r.objs) {
			count++
			pod := w.pod.DeepCopy()
			for i, a := range allowedCapabilities {
				if dropAllowed(pod, r.winners[w.service], a) {
					used[i]++
				}
			}
			res := policy.AggregateCheckResults(evaluator.EvaluatePod(level, &pod.ObjectMeta, &pod.Spec))
			if !res.Allowed {
				t.Errorf("%s violates Pod Security %s: %s", w.name, level.Level, res.ForbiddenDetail())
			}
		}
	}
	if count < 50 {
		t.Errorf("evaluated only %d workloads", count)
	}
	for i, a := range allowedCapabilities {
		if used[i] == 0 {
			t.Errorf("allow-list entry %v for %v is never needed; remove it", a.capabilities, a.presets)
		}
	}
	t.Logf("%d workloads pass restricted; the capability allow-list applied to %v of them", count, used)
}

// dropAllowed removes a's capabilities from each container of pod whose
// capabilities.add only a's presets set (winners is the service's
// provenance), and reports whether it removed any.
func dropAllowed(pod *corev1.PodTemplateSpec, winners map[string]string, a capabilityAllowance) bool {
	found := false
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil || !addedOnlyBy(winners, c.Name, a) {
			continue
		}
		add := c.SecurityContext.Capabilities.Add
		kept := slices.DeleteFunc(slices.Clone(add), func(c corev1.Capability) bool { return slices.Contains(a.capabilities, c) })
		if len(kept) != len(add) {
			found = true
			c.SecurityContext.Capabilities.Add = kept
		}
	}
	return found
}

// addedOnlyBy reports whether some layer set capabilities.add for the
// container and every layer that did is one of a's presets.
func addedOnlyBy(winners map[string]string, container string, a capabilityAllowance) bool {
	suffix := ".containers[name=" + container + "].securityContext.capabilities.add"
	found := false
	for field, layer := range winners {
		if !strings.HasSuffix(field, suffix) && !strings.Contains(field, suffix+"[") {
			continue
		}
		if !a.allowedAdder(layer) {
			return false
		}
		found = true
	}
	return found
}
