package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Steps 11 to 13: services on the GPU nodes.
const (
	gpuValuesFile    = "test/demo/values-gpu.yaml"
	gpuFixValuesFile = "test/demo/values-gpu-fix.yaml"
	// gpuService fits; bigService asks for more GPUs per pod than a node
	// has until the fix.
	gpuService = "qwen-gpu"
	bigService = "big"
	gpuNS      = "demo"
)

// gpuOutcome is what steps 14 to 16 showed.
type gpuOutcome struct {
	// GPUPods are qwen-gpu's pods Running on GPU nodes, with the GPUs each
	// requests.
	GPUPods map[string]int64
	// Unschedulable is big's Ready message before the fix, which carries
	// the scheduler's message.
	Unschedulable string
	// FixedReady says big was Ready after the fix, on a GPU node.
	FixedReady bool
	// Collected lists, by kind, what big had before its deletion, and
	// Left what remained after (zero each when the garbage collector did
	// its job).
	Collected, Left map[string]int
}

func (d *demo) gpuValues(fix bool) []string {
	args := []string{"upgrade", release, filepath.Join(d.cfg.Root, chart), "--namespace", systemNamespace,
		"-f", filepath.Join(d.cfg.Root, valuesFile), "-f", filepath.Join(d.cfg.Root, gpuValuesFile)}
	if fix {
		args = append(args, "-f", filepath.Join(d.cfg.Root, gpuFixValuesFile))
	}
	return d.chartArgs(args...)
}

// 14. Two GPU services: one fits, one asks for 16 GPUs per pod.
func (d *demo) gpuServices(ctx context.Context) error {
	d.header("GPU services: helm upgrade -f " + gpuValuesFile + " (qwen-gpu: tensor parallel 2; big: 16 GPUs per pod, more than any node has)")
	d.out.GPU = &gpuOutcome{GPUPods: map[string]int64{}}
	if _, err := d.command(ctx, d.helmEnv(), d.helm, d.gpuValues(false)...); err != nil {
		return err
	}
	var why string
	err := d.poll(ctx, "qwen-gpu Ready, big reported unschedulable", 300*time.Millisecond, func() (bool, error) {
		ready, _, err := d.readyOf(ctx, gpuService)
		if err != nil || !ready {
			return false, err
		}
		_, why, err = d.readyOf(ctx, bigService)
		return strings.Contains(why, "Unschedulable"), err
	})
	if err != nil {
		return err
	}
	d.out.GPU.Unschedulable = why
	pods, err := d.servicePods(ctx, gpuService)
	if err != nil {
		return err
	}
	for _, p := range pods {
		// The model servers; the scheduler may land on any node.
		if p.Labels[convention.LabelComponent] != "llminferenceservice-workload" {
			continue
		}
		if p.Status.Phase == corev1.PodRunning && strings.HasPrefix(p.Spec.NodeName, "kwok-gpu-") {
			d.out.GPU.GPUPods[p.Name] = podGPUs(&p)
		}
	}
	d.say("qwen-gpu is Ready; big is not, and `odh-serving status` says why, in the scheduler's words:")
	if err := d.printStatus(ctx, gpuNS); err != nil {
		return err
	}
	table, err := nodeTable(ctx, d.c)
	if err != nil {
		return err
	}
	d.say("the nodes: qwen-gpu's pods request 2 GPUs each (tensor parallel 2); big's pod waits:")
	d.block(table)
	return nil
}

// 15. The fix: tensor parallel 8, one node's GPUs.
func (d *demo) gpuFix(ctx context.Context) error {
	d.header("Fix big: helm upgrade -f " + gpuFixValuesFile + " (tensor parallel 8: the 8 GPUs of one node)")
	if _, err := d.command(ctx, d.helmEnv(), d.helm, d.gpuValues(true)...); err != nil {
		return err
	}
	err := d.poll(ctx, "big Ready", 300*time.Millisecond, func() (bool, error) {
		ready, _, err := d.readyOf(ctx, bigService)
		return ready, err
	})
	if err != nil {
		return err
	}
	pods, err := d.servicePods(ctx, bigService)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && podGPUs(&p) == 8 && strings.HasPrefix(p.Spec.NodeName, "kwok-gpu-") {
			d.out.GPU.FixedReady = true
			d.say("big's pod %s runs on %s with 8 GPUs", p.Name, p.Spec.NodeName)
		}
	}
	if err := d.printStatus(ctx, gpuNS); err != nil {
		return err
	}
	table, err := nodeTable(ctx, d.c)
	if err != nil {
		return err
	}
	d.block(table)
	return nil
}

// 16. Delete big: the garbage collector removes its Deployments,
// ReplicaSets and Pods.
func (d *demo) garbageCollect(ctx context.Context) error {
	d.header("Delete big (kubectl delete llminferenceservice big): the garbage collector removes its Deployments, ReplicaSets and Pods")
	before, err := d.workloadObjects(ctx, bigService)
	if err != nil {
		return err
	}
	d.out.GPU.Collected = before
	d.say("before: %s", countsText(before))
	svc := &v1alpha2.LLMInferenceService{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: gpuNS, Name: bigService}, svc); err != nil {
		return err
	}
	if err := d.c.Delete(ctx, svc); err != nil {
		return fmt.Errorf("delete LLMInferenceService %s/%s: %w", gpuNS, bigService, err)
	}
	var left map[string]int
	err = d.poll(ctx, "big's workloads collected", 300*time.Millisecond, func() (bool, error) {
		left, err = d.workloadObjects(ctx, bigService)
		if err != nil {
			return false, err
		}
		for _, n := range left {
			if n > 0 {
				return false, nil
			}
		}
		return true, nil
	})
	d.out.GPU.Left = left
	if err != nil {
		return err
	}
	d.say("after: %s (owner references: service -> Deployment -> ReplicaSet -> Pod; kube-controller-manager's garbage collector, kwok deleted the pods)", countsText(left))
	table, err := nodeTable(ctx, d.c)
	if err != nil {
		return err
	}
	d.block(table)
	return nil
}

// readyOf returns a demo-namespace service's readiness for its current
// generation and its Ready message.
func (d *demo) readyOf(ctx context.Context, name string) (bool, string, error) {
	svc := &v1alpha2.LLMInferenceService{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: gpuNS, Name: name}, svc); err != nil {
		return false, "", client.IgnoreNotFound(err)
	}
	c := meta.FindStatusCondition(svc.Status.Conditions, v1alpha2.ConditionReady)
	if c == nil || svc.Status.ObservedGeneration != svc.Generation {
		return false, "", nil
	}
	return c.Status == "True", c.Reason + ": " + c.Message, nil
}

func (d *demo) printStatus(ctx context.Context, namespace string) error {
	out, err := d.quiet(ctx, d.odh, "status", "-n", namespace, "--kubeconfig", d.kubeconfig)
	if err != nil {
		return fmt.Errorf("odh-serving status -n %s: %w", namespace, err)
	}
	d.say("$ odh-serving status -n %s", namespace)
	d.block(out)
	return nil
}

// servicePods lists a service's pods by the engine's labels.
func (d *demo) servicePods(ctx context.Context, name string) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := d.c.List(ctx, list, client.InNamespace(gpuNS), client.MatchingLabels{partOf: "llminferenceservice", "app.kubernetes.io/name": name}); err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", name, err)
	}
	return list.Items, nil
}

// workloadObjects counts a service's Deployments, ReplicaSets and Pods
// (by the engine's labels, which the pod template passes on).
func (d *demo) workloadObjects(ctx context.Context, name string) (map[string]int, error) {
	sel := client.MatchingLabels{partOf: "llminferenceservice", "app.kubernetes.io/name": name}
	out := map[string]int{}
	for kind, list := range map[string]client.ObjectList{"Deployment": &appsv1.DeploymentList{}, "ReplicaSet": &appsv1.ReplicaSetList{}, "Pod": &corev1.PodList{}} {
		if err := d.c.List(ctx, list, client.InNamespace(gpuNS), sel); err != nil {
			return nil, fmt.Errorf("list %ss of %s: %w", kind, name, err)
		}
		out[kind] = meta.LenList(list)
	}
	return out, nil
}

func countsText(m map[string]int) string {
	return fmt.Sprintf("%d Deployments, %d ReplicaSets, %d Pods", m["Deployment"], m["ReplicaSet"], m["Pod"])
}
