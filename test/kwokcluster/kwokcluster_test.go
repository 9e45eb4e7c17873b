package kwokcluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/hostlock"
	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var (
	cp    *controlplane.ControlPlane
	nodes = testenv.Cluster{LWS: true}
)

func init() { testenv.InitLogger() }

// TestMain installs the LeaderWorkerSet CRD alone: the tests use core kinds
// and LeaderWorkerSets only, and every other CRD would cost the API server
// CPU to install.
func TestMain(m *testing.M) {
	testenv.MainWith(m, &cp, controlplane.Options{CRDs: []string{crds.LWS}}, &nodes)
}

// deployment is a Deployment of replicas pods of one container with image,
// asking for gpus GPUs each.
func deployment(ns, name, image string, replicas int32, gpus int64) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	c := corev1.Container{Name: "main", Image: image}
	if gpus > 0 {
		c.Resources.Limits = corev1.ResourceList{kwokcluster.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
			},
		},
	}
}

func pods(t *testing.T, ns, app string) []corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	if err := cp.Client.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// namespace is a new namespace for the test, deleted when the test ends;
// the test then deletes its pods and waits until they are gone, so that
// the next test, or the next run with -count>1, finds the nodes' GPUs
// free. It does not wait for the namespace to go, which nothing here
// needs: kube-controller-manager's namespace controller first empties a
// namespace 5 s after its deletion, and finishes 5 s after that when there
// were pods (namespaceDeletionGracePeriod, v1.34), so that waiting took
// 5 to 11 s a test, most of the package's time.
func namespace(t *testing.T) string {
	t.Helper()
	ns := testenv.NewNamespace(t, cp.Client, "kwok")
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		// Terminating first: the API server then refuses new pods in it, so
		// that no ReplicaSet or StatefulSet replaces the pods deleted next.
		if err := cp.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatalf("delete namespace %s: %v", ns, err)
		}
		if err := cp.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns)); err != nil {
			t.Fatalf("delete the pods of namespace %s: %v", ns, err)
		}
		testenv.Within(t, time.Minute, "the pods of namespace "+ns+" are gone", func() error {
			list := &corev1.PodList{}
			if err := cp.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				return err
			}
			if n := len(list.Items); n > 0 {
				return fmt.Errorf("%d pods left, the first %s", n, list.Items[0].Name)
			}
			return nil
		})
	})
	return ns
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestIntegrationNodes(t *testing.T) {
	nodes.Need(t)
	list := &corev1.NodeList{}
	if err := cp.Client.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	gpuNodes, cpuNodes := 0, 0
	for _, n := range list.Items {
		if n.Labels[kwokcluster.TypeLabel] != "kwok" || !strings.HasPrefix(n.Name, "kwok-") {
			t.Errorf("node %s is not named and labelled as simulated: labels %v", n.Name, n.Labels)
		}
		gpus := n.Status.Allocatable[kwokcluster.GPUResource]
		switch {
		case gpus.Value() == 8 && n.Labels[kwokcluster.GPUProductLabel] == kwokcluster.GPUProduct:
			gpuNodes++
		case gpus.IsZero() && n.Labels[kwokcluster.GPUProductLabel] == "":
			cpuNodes++
		default:
			t.Errorf("node %s: %s GPUs, product %q", n.Name, gpus.String(), n.Labels[kwokcluster.GPUProductLabel])
		}
	}
	if gpuNodes != 4 || cpuNodes != 2 {
		t.Errorf("%d GPU nodes and %d CPU nodes, want 4 and 2", gpuNodes, cpuNodes)
	}
}

// TestIntegrationAddNodes: a node registered while the cluster runs is
// played by kwok like the first ones and takes pods; RemoveNodes takes it
// away again (a benchmark adds nodes for its size, and the tests after it
// count six).
func TestIntegrationAddNodes(t *testing.T) {
	nodes.Need(t)
	extra := []kwokcluster.Node{{Name: "kwok-test-extra-0", CPU: "4", Memory: "8Gi", Pods: 10}}
	t.Cleanup(func() { // after the namespace's pods are gone
		if err := kwokcluster.RemoveNodes(context.WithoutCancel(t.Context()), cp.Client, extra); err != nil {
			t.Error(err)
		}
	})
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := kwokcluster.AddNodes(ctx, cp.Client, extra); err != nil {
		t.Fatal(err)
	}
	d := deployment(ns, "on-extra", "example.invalid/app:1", 1, 0)
	d.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": extra[0].Name}
	if err := cp.Client.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	testenv.Within(t, time.Minute, "the pod runs on the added node", func() error {
		ps := pods(t, ns, "on-extra")
		if len(ps) != 1 {
			return fmt.Errorf("%d pods", len(ps))
		}
		if p := ps[0]; p.Spec.NodeName != extra[0].Name || p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s: %s on node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		return nil
	})
	// Without its pods first: kwok plays no pod of a node that is gone.
	if err := cp.Client.Delete(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	testenv.Within(t, time.Minute, "the pod on the added node is gone", func() error {
		if n := len(pods(t, ns, "on-extra")); n > 0 {
			return fmt.Errorf("%d pods left", n)
		}
		return nil
	})
	if err := kwokcluster.RemoveNodes(t.Context(), cp.Client, extra); err == nil {
		err = cp.Client.Get(t.Context(), client.ObjectKey{Name: extra[0].Name}, &corev1.Node{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("node %s after RemoveNodes: %v, want NotFound", extra[0].Name, err)
		}
	} else {
		t.Error(err)
	}
}

// TestIntegrationNodeLeases: kwok renews each node's Lease, as a kubelet
// does (see NodeLeaseSeconds). Without it every node went NotReady about a
// minute after the start, and every pod not Ready with it. kwok makes each
// Lease with the node and renews it every quarter of NodeLeaseSeconds: a
// Lease renewed later than a second after it was made has been renewed by
// it (the wait is for the first renewal, at most about ten seconds after
// the cluster's start, not for the next one after this test's).
//
// In parallel: it runs after the package's other tests, and by then their
// time has usually passed that first renewal.
func TestIntegrationNodeLeases(t *testing.T) {
	t.Parallel()
	nodes.Need(t)
	for _, n := range kwokcluster.DefaultNodes() {
		testenv.Within(t, time.Minute, "node "+n.Name+"'s Lease renewed", func() error {
			l := &coordinationv1.Lease{}
			if err := cp.Client.Get(t.Context(), client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: n.Name}, l); err != nil {
				return err
			}
			// The creation time is cut to the second, the renewal's is not.
			made := l.CreationTimestamp.Add(time.Second)
			if l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(made) {
				return fmt.Errorf("lease made at %v, last renewed %v", l.CreationTimestamp, l.Spec.RenewTime)
			}
			return nil
		})
	}
}

// TestIntegrationGPUPods fills the four GPU nodes with four 8-GPU pods,
// sees a fifth one reported unschedulable by the scheduler, and deletes
// the Deployment: the garbage collector removes its ReplicaSet and pods.
// The pods' IPs come from the cluster's pod range, which no other cluster
// may claim while it runs.
func TestIntegrationGPUPods(t *testing.T) {
	cluster := nodes.Need(t)
	ns := namespace(t)
	d := deployment(ns, "big", "example.invalid/model:1", 4, 8)
	if err := cp.Client.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	_, cidr, err := net.ParseCIDR(cluster.PodCIDR)
	if err != nil {
		t.Fatal(err)
	}
	next, err := kwokcluster.ClaimPodRange()
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Release(); err != nil {
		t.Fatal(err)
	}
	if next.CIDR == cluster.PodCIDR {
		t.Errorf("the running cluster's pod range %s was claimed again", cluster.PodCIDR)
	}
	testenv.Within(t, time.Minute, "four pods Running and Ready on four GPU nodes", func() error {
		nodes := map[string]bool{}
		for _, p := range pods(t, ns, "big") {
			ready := condition(&p, corev1.PodReady)
			if p.Status.Phase != corev1.PodRunning || ready == nil || ready.Status != corev1.ConditionTrue {
				return fmt.Errorf("pod %s: %s, Ready %v", p.Name, p.Status.Phase, ready)
			}
			if !strings.HasPrefix(p.Spec.NodeName, "kwok-gpu-") {
				return fmt.Errorf("pod %s on node %q", p.Name, p.Spec.NodeName)
			}
			if ip := net.ParseIP(p.Status.PodIP); ip == nil || !cidr.Contains(ip) {
				return fmt.Errorf("pod %s has IP %q, not in %s", p.Name, p.Status.PodIP, cidr)
			}
			nodes[p.Spec.NodeName] = true
		}
		if len(nodes) != 4 {
			return fmt.Errorf("pods on nodes %v, want four GPU nodes", nodes)
		}
		return nil
	})
	testenv.Within(t, time.Minute, "Deployment big reports 4 available replicas", func() error {
		if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 4 || d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("status %+v", d.Status)
		}
		return nil
	})

	more := deployment(ns, "more", "example.invalid/model:1", 1, 1)
	if err := cp.Client.Create(t.Context(), more); err != nil {
		t.Fatal(err)
	}
	testenv.Within(t, time.Minute, "the scheduler reports the fifth pod unschedulable", func() error {
		ps := pods(t, ns, "more")
		if len(ps) == 0 {
			return fmt.Errorf("no pod yet")
		}
		p := ps[0]
		c := condition(&p, corev1.PodScheduled)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			return fmt.Errorf("pod %s: PodScheduled %+v", p.Name, c)
		}
		const want = "0/6 nodes are available: 6 Insufficient nvidia.com/gpu."
		if !strings.HasPrefix(c.Message, want) {
			return fmt.Errorf("pod %s: message %q, want it to start with %q", p.Name, c.Message, want)
		}
		return nil
	})

	if err := cp.Client.Delete(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	testenv.Within(t, time.Minute, "the garbage collector removes big's ReplicaSet and pods", func() error {
		rs := &appsv1.ReplicaSetList{}
		if err := cp.Client.List(t.Context(), rs, client.InNamespace(ns), client.MatchingLabels{"app": "big"}); err != nil {
			return err
		}
		if n := len(rs.Items) + len(pods(t, ns, "big")); n > 0 {
			return fmt.Errorf("%d ReplicaSets and pods left", n)
		}
		return nil
	})
	testenv.Within(t, time.Minute, "the freed GPUs take the pending pod", func() error {
		ps := pods(t, ns, "more")
		if len(ps) == 0 {
			return fmt.Errorf("no pod")
		}
		p := ps[0]
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s: %s", p.Name, p.Status.Phase)
		}
		return nil
	})
}

// TestIntegrationFaults checks the three fault images of stages/faults.yaml.
func TestIntegrationFaults(t *testing.T) {
	nodes.Need(t)
	ns := namespace(t)
	for _, tc := range []struct {
		name, image, phase, waiting string
	}{
		{"pull", kwokcluster.ImagePullFails, "Pending", "ImagePullBackOff"},
		{"crash", kwokcluster.CrashLoop, "Running", "CrashLoopBackOff"},
		{"probe", kwokcluster.NeverReady, "Running", ""},
	} {
		if err := cp.Client.Create(t.Context(), deployment(ns, tc.name, tc.image, 1, 0)); err != nil {
			t.Fatal(err)
		}
		testenv.Within(t, time.Minute, tc.name+": the pod shows the fault", func() error {
			ps := pods(t, ns, tc.name)
			if len(ps) == 0 {
				return fmt.Errorf("no pod yet")
			}
			p := ps[0]
			ready := condition(&p, corev1.PodReady)
			if string(p.Status.Phase) != tc.phase || ready == nil || ready.Status != corev1.ConditionFalse ||
				ready.Reason != "ContainersNotReady" || ready.Message != "containers with unready status: [main]" {
				return fmt.Errorf("pod %s: phase %s, Ready %+v", p.Name, p.Status.Phase, ready)
			}
			if len(p.Status.ContainerStatuses) != 1 {
				return fmt.Errorf("pod %s: container statuses %+v", p.Name, p.Status.ContainerStatuses)
			}
			cs := p.Status.ContainerStatuses[0]
			switch {
			case tc.waiting == "" && (cs.State.Running == nil || cs.Ready):
				return fmt.Errorf("pod %s: container %+v, want running and not ready", p.Name, cs)
			case tc.waiting != "" && (cs.State.Waiting == nil || cs.State.Waiting.Reason != tc.waiting || cs.State.Waiting.Message == ""):
				return fmt.Errorf("pod %s: container state %+v, want waiting with %s", p.Name, cs.State, tc.waiting)
			}
			return nil
		})
	}
	playedOnce(t, ns, "pull", "crash", "probe")
}

// playedOnce checks that kwok leaves the pod of each app as it is once it
// shows its fault, as a pod stuck on one does: after a label change, which
// kwok sees and matches its stages against again, nothing writes the pod
// for two seconds. A stage that matched its own result again would write
// it in a loop: kwok gave the crash-loop and never-ready pods a new IP on
// every play, thousands of writes a minute for as long as the pod lived.
// The pods are watched at once, each from its own label change on, in the
// same two seconds.
func playedOnce(t *testing.T, ns string, apps ...string) {
	t.Helper()
	var touched []*corev1.Pod
	for _, app := range apps {
		ps := pods(t, ns, app)
		if len(ps) != 1 {
			t.Fatalf("%s: %d pods", app, len(ps))
		}
		p := &ps[0]
		if err := cp.Client.Patch(t.Context(), p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`))); err != nil {
			t.Fatal(err)
		}
		touched = append(touched, p)
	}
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait() // the watches end with ctx
	for _, p := range touched {
		w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns),
			&client.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", p.Name), Raw: &metav1.ListOptions{ResourceVersion: p.ResourceVersion}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if now, ok := ev.Object.(*corev1.Pod); ok {
					t.Errorf("pod %s, showing its fault, was written again (%s): phase %s, IP %q, was %q", p.Name, ev.Type, now.Status.Phase, now.Status.PodIP, p.Status.PodIP)
					return
				}
			}
		})
	}
}

// TestIntegrationReadinessLabel checks stages/readiness.yaml: labelling a
// Running pod ReadinessFails takes its Ready condition to False with the
// kubelet's reason and message, ReadinessPasses back to True with neither
// (as a kubelet's), and the pod keeps its phase and IP throughout: kwok's
// pod-ready stage must not play again.
func TestIntegrationReadinessLabel(t *testing.T) {
	nodes.Need(t)
	ns := namespace(t)
	if err := cp.Client.Create(t.Context(), deployment(ns, "probe", "example.invalid/model:1", 1, 0)); err != nil {
		t.Fatal(err)
	}
	var ip string
	readyIs := func(want corev1.ConditionStatus, reason, message string) func() error {
		return func() error {
			ps := pods(t, ns, "probe")
			if len(ps) != 1 {
				return fmt.Errorf("%d pods", len(ps))
			}
			p := ps[0]
			ready := condition(&p, corev1.PodReady)
			if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || ready == nil ||
				ready.Status != want || ready.Reason != reason || ready.Message != message {
				return fmt.Errorf("pod %s: phase %s, IP %q, Ready %+v", p.Name, p.Status.Phase, p.Status.PodIP, ready)
			}
			if ip == "" {
				ip = p.Status.PodIP
			} else if p.Status.PodIP != ip {
				return fmt.Errorf("pod %s: IP %s, was %s", p.Name, p.Status.PodIP, ip)
			}
			return nil
		}
	}
	label := func(value string) {
		t.Helper()
		ps := pods(t, ns, "probe")
		if len(ps) != 1 {
			t.Fatalf("%d pods", len(ps))
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, kwokcluster.ReadinessLabel, value)
		if err := cp.Client.Patch(t.Context(), &ps[0], client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Within(t, time.Minute, "the pod Running and Ready", readyIs(corev1.ConditionTrue, "", ""))
	label(kwokcluster.ReadinessFails)
	testenv.Within(t, time.Minute, "the pod not Ready, its probe failing", readyIs(corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [main]"))
	label(kwokcluster.ReadinessPasses)
	testenv.Within(t, time.Minute, "the pod Ready again", readyIs(corev1.ConditionTrue, "", ""))
}

// TestIntegrationFirstPodAlone: the first pod kwok plays is Start's own,
// alone. kwok (v0.7.0 as v0.8.0) makes its pool of pod IPs the first time
// it plays a pod of the range, and two pods played at once then can each
// make a pool and both get its first IP (shown with 250 new pools, one per
// node's podCIDR, of 4 pods bound before kwok v0.8.0 started: "IP
// 127.77.135.1 given to [p135-0 p135-1]"). A test's first Deployment
// would be those two pods.
func TestIntegrationFirstPodAlone(t *testing.T) {
	cluster := nodes.Need(t)
	log, err := os.ReadFile(filepath.Join(cluster.Dir, "kwok.log"))
	if err != nil {
		t.Fatal(err)
	}
	// kwok logs JSON: {"msg":"Patch pod","pod":"namespace/name",...}.
	var first string
	for line := range strings.Lines(string(log)) {
		var entry struct{ Msg, Pod string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "Patch pod" {
			first = entry.Pod
			break
		}
	}
	if ns, name, _ := strings.Cut(first, "/"); !strings.HasPrefix(ns, "kwokcluster-probe-") || name != "first-pod" {
		t.Errorf("the first pod kwok played: %q; want Start's first-pod in its probe namespace", first)
	}
}

// etcd, kube-apiserver and the webhook server (test/controlplane), and
// kube-scheduler and the LWS operator, listen at ports claimed for them
// (hostlock.ClaimPort), from the range the kernel never hands out, held
// while they run: a port asked of the kernel and closed again could be
// handed to any process of the machine before they bound it. (Checked here,
// on a control plane and a cluster that run anyway, rather than on one
// started for it.)
func TestIntegrationPortsClaimed(t *testing.T) {
	cluster := nodes.Need(t)
	ports := map[string]int{}
	for i, p := range cp.Ports() {
		ports[fmt.Sprintf("control plane port %d (etcd, its peers, kube-apiserver, webhooks)", i)] = p.Number
	}
	for i, n := range cluster.Ports {
		ports[fmt.Sprintf("cluster port %d (kube-scheduler, LWS operator)", i)] = n
	}
	if len(ports) != 6 {
		t.Fatalf("ports %v, want etcd's two, kube-apiserver's, the webhook server's, the scheduler's and the LWS operator's", ports)
	}
	for what, n := range ports {
		if n < hostlock.FirstPort || n > hostlock.LastPort {
			t.Errorf("%s: %d, want a claimed port, from %d to %d", what, n, hostlock.FirstPort, hostlock.LastPort)
			continue
		}
		if _, err := hostlock.Try(hostlock.Dir(), hostlock.PortName(n)); !errors.Is(err, hostlock.ErrHeld) {
			t.Errorf("%s: another claim of port %d: %v, want ErrHeld", what, n, err)
		}
	}
	if u, err := url.Parse(cp.Config.Host); err != nil || u.Port() != strconv.Itoa(cp.Ports()[2].Number) {
		t.Errorf("kube-apiserver at %s (%v), want its claimed port %d", cp.Config.Host, err, cp.Ports()[2].Number)
	}
}
