package kwokcluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels and annotations of the simulated nodes.
const (
	// ManagedAnnotation marks a node kwok plays; kwok runs with
	// --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake.
	ManagedAnnotation = "kwok.x-k8s.io/node"
	managedValue      = "fake"
	// TypeLabel is type=kwok on every simulated node (kwok's convention).
	TypeLabel = "type"
	typeValue = "kwok"
	// GPUResource is the extended resource NVIDIA's device plugin
	// advertises.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// GPUProductLabel names the GPU model (NVIDIA's GPU feature discovery).
	GPUProductLabel = "nvidia.com/gpu.product"
	// GPUProduct is the model of the simulated GPU nodes.
	GPUProduct = "NVIDIA-H100-80GB-HBM3"
)

// Node is a simulated node.
type Node struct {
	Name string
	// GPUs is its count of GPUResource; zero for a CPU-only node.
	GPUs int
	// CPU and Memory are its allocatable cores and memory.
	CPU, Memory string
	// Pods is the most pods it takes.
	Pods int
}

// DefaultNodes are four GPU nodes with 8 GPUs each (kwok-gpu-0 … 3) and
// two CPU-only nodes (kwok-cpu-0, kwok-cpu-1).
func DefaultNodes() []Node {
	var nodes []Node
	for i := range 4 {
		nodes = append(nodes, Node{Name: fmt.Sprintf("kwok-gpu-%d", i), GPUs: 8, CPU: "96", Memory: "1Ti", Pods: 110})
	}
	for i := range 2 {
		nodes = append(nodes, Node{Name: fmt.Sprintf("kwok-cpu-%d", i), CPU: "64", Memory: "256Gi", Pods: 1000})
	}
	return nodes
}

// object is the Node as registered: status set on create (the API server
// keeps a Node's status on create), which kwok's node-initialize stage
// keeps while it adds the conditions and addresses.
func (n Node) object() (*corev1.Node, error) {
	resources := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: n.CPU, corev1.ResourceMemory: n.Memory, corev1.ResourcePods: strconv.Itoa(n.Pods)} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("node %s: %s %q: %w", n.Name, name, v, err)
		}
		resources[name] = q
	}
	labels := map[string]string{
		TypeLabel:                typeValue,
		"kubernetes.io/hostname": n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
	}
	if n.GPUs > 0 {
		resources[GPUResource] = *resource.NewQuantity(int64(n.GPUs), resource.DecimalSI)
		labels[GPUProductLabel] = GPUProduct
		labels["nvidia.com/gpu.count"] = strconv.Itoa(n.GPUs)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{ManagedAnnotation: managedValue, "node.alpha.kubernetes.io/ttl": "0"},
		},
		Status: corev1.NodeStatus{Capacity: resources, Allocatable: resources.DeepCopy()},
	}, nil
}

// CreateNodes registers the nodes; one that exists already is left as it
// is.
func CreateNodes(ctx context.Context, c client.Client, nodes []Node) error {
	for _, n := range nodes {
		obj, err := n.object()
		if err != nil {
			return err
		}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("register simulated node %s: %w", n.Name, err)
		}
	}
	return nil
}

// AddNodes registers more nodes while the cluster runs (kwok plays every
// node with ManagedAnnotation, whenever it comes) and waits, until ctx
// ends, until each is Ready. RemoveNodes takes them away again.
func AddNodes(ctx context.Context, c client.Client, nodes []Node) error {
	if err := CreateNodes(ctx, c, nodes); err != nil {
		return err
	}
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = nodesReady(ctx, c, nodes)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("kwok cluster: the added nodes are not Ready: %w", errors.Join(last, err))
	}
	return nil
}

// RemoveNodes deletes the nodes (AddNodes'). Delete their pods first: kwok
// plays no pod of a node that is gone, so a pod left there would never
// finish terminating. The garbage collector removes the nodes' Leases,
// whose owner kwok makes the node.
func RemoveNodes(ctx context.Context, c client.Client, nodes []Node) error {
	for _, n := range nodes {
		if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("kwok cluster: delete node %s: %w", n.Name, err)
		}
	}
	return nil
}

// nodesReady returns nil once every node is Ready, or what is not.
func nodesReady(ctx context.Context, c client.Client, nodes []Node) error {
	for _, n := range nodes {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		ready := false
		for _, cond := range node.Status.Conditions {
			ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
		}
		if !ready {
			return fmt.Errorf("node %s is not Ready yet", n.Name)
		}
	}
	return nil
}
