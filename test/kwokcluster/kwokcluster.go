package kwokcluster

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
	"github.com/opendatahub-io/odh-serving/test/localcluster"
)

// Images that make kwok play a fault (stages/faults.yaml): name one as a
// container's image and the service's pods fail that way.
const (
	// ImagePullFails leaves the pod Pending, its containers waiting with
	// ImagePullBackOff.
	ImagePullFails = "kwok.invalid/odh-serving/image-pull-fails:v1"
	// CrashLoop runs the pod with its containers waiting in
	// CrashLoopBackOff, restarted 5 times.
	CrashLoop = "kwok.invalid/odh-serving/crash-loop:v1"
	// NeverReady runs the pod with its containers running but not ready,
	// as when the readiness probe fails.
	NeverReady = "kwok.invalid/odh-serving/never-ready:v1"
)

// ReadinessLabel on a Running pod makes kwok play its readiness probe
// (stages/readiness.yaml): ReadinessFails takes the pod's Ready condition
// to False, ReadinessPasses back to True.
const (
	ReadinessLabel  = "readiness.kwok.odh-serving.opendatahub.io"
	ReadinessFails  = "fail"
	ReadinessPasses = "pass"
)

// NodeLeaseSeconds is the duration of the node Leases kwok holds and renews
// (every quarter of it), as a kubelet does. kwok's node heartbeat stage
// (node-heartbeat-with-lease) refreshes a node's status only every 10 to
// 20 minutes, so without the Lease the node lifecycle controller would
// mark every node NotReady after its grace period (50 s), and every pod on
// it not Ready.
const NodeLeaseSeconds = 40

// Controllers are kube-controller-manager's controllers that run (their
// names in Kubernetes v1.34). Left out: cluster signing and the
// ServiceAccount token controller (no pod here mounts a token), volumes,
// DaemonSets, CronJobs, disruption budgets, quotas and the rest.
var Controllers = []string{
	"deployment-controller", "replicaset-controller", "statefulset-controller",
	"garbage-collector-controller", "namespace-controller",
	"endpointslice-controller", "horizontal-pod-autoscaler-controller",
	"serviceaccount-controller", "job-controller", "node-lifecycle-controller",
}

// ClientQPS is the rate of requests a second, with bursts of twice as
// many, that kube-scheduler and each of kube-controller-manager's
// controllers may send (--kube-api-qps, --kube-api-burst; kwok has no
// limit). Their defaults, 50 and 20 a controller, made the cluster's pace
// the clients' own: 500 prefill/decode services are 2,000 pods, a
// SuccessfulCreate event each and a few status updates of 1,500
// ReplicaSets, which the ReplicaSet controller alone would have sent in
// about seven minutes at 20 a second. With this limit the API server's
// CPU sets the pace, as it does for the other clients here.
const ClientQPS = 200

var (
	//go:embed stages/kwok-v0.7.0-default-stages.yaml
	defaultStages string
	//go:embed stages/faults.yaml
	faultStages string
	//go:embed stages/readiness.yaml
	readinessStages string
)

// Options say where the binaries are and what the cluster has.
type Options struct {
	// AssetsDir holds kube-scheduler, kube-controller-manager and kwok.
	// Empty means $KUBEBUILDER_ASSETS.
	AssetsDir string
	// Dir receives the kubeconfig the processes use, the stages and each
	// process's log (kube-scheduler.log, kube-controller-manager.log,
	// kwok.log). Empty means a new temporary folder, removed by Stop.
	Dir string
	// Nodes are registered before the processes start; nil means
	// DefaultNodes.
	Nodes []Node
	// StartTimeout bounds the wait until the nodes are Ready and the
	// scheduler and controller manager work; default one minute.
	StartTimeout time.Duration
	// LWS also runs the LeaderWorkerSet operator (PrepareLWS) and installs
	// its webhooks; the API server must serve LeaderWorkerSets already.
	LWS bool
}

// Process is one of the cluster's processes: its name, command line and
// log file.
type Process struct {
	Name string
	Args []string
	Log  string
}

// Processes writes the kubeconfig (for cfg's user, which must be allowed
// everything) and the stages into dir and returns the three processes to
// run, for a caller that runs them its own way (the demo, detached).
// schedulerPort is the scheduler's HTTPS port (health checks) on
// 127.0.0.1; podCIDR is where kwok takes pod IPs from (a PodRange's).
func Processes(cfg *rest.Config, assetsDir, dir string, schedulerPort int, podCIDR string) ([]Process, error) {
	for _, bin := range []string{"kube-scheduler", "kube-controller-manager", "kwok"} {
		if _, err := os.Stat(filepath.Join(assetsDir, bin)); err != nil {
			return nil, fmt.Errorf("kwok cluster: %s missing from %s (run `bash hack/setup-test-assets.sh cluster`): %w", bin, assetsDir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("kwok cluster: create %s: %w", dir, err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(kubeconfig, cfg); err != nil {
		return nil, fmt.Errorf("kwok cluster: %w", err)
	}
	stages := filepath.Join(dir, "stages.yaml")
	if err := os.WriteFile(stages, []byte(defaultStages+"\n---\n"+faultStages+"\n---\n"+readinessStages), 0o600); err != nil {
		return nil, fmt.Errorf("kwok cluster: write the stages: %w", err)
	}
	bin := func(name string) string { return filepath.Join(assetsDir, name) }
	return []Process{
		{Name: "kube-scheduler", Log: filepath.Join(dir, "kube-scheduler.log"), Args: []string{
			bin("kube-scheduler"), "--kubeconfig", kubeconfig, "--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(schedulerPort),
			"--cert-dir", filepath.Join(dir, "kube-scheduler-certs"),
			"--kube-api-qps=" + strconv.Itoa(ClientQPS), "--kube-api-burst=" + strconv.Itoa(2*ClientQPS),
		}},
		{Name: "kube-controller-manager", Log: filepath.Join(dir, "kube-controller-manager.log"), Args: []string{
			bin("kube-controller-manager"), "--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port=0",
			"--controllers=" + strings.Join(Controllers, ","),
			"--kube-api-qps=" + strconv.Itoa(ClientQPS), "--kube-api-burst=" + strconv.Itoa(2*ClientQPS),
		}},
		{Name: "kwok", Log: filepath.Join(dir, "kwok.log"), Args: []string{
			bin("kwok"), "--kubeconfig", kubeconfig, "--config", stages,
			"--manage-nodes-with-annotation-selector=" + ManagedAnnotation + "=" + managedValue,
			"--cidr=" + podCIDR,
			// Standalone kwok renews no node Lease unless told (kwokctl
			// passes 40); its heartbeat stage relies on the Lease.
			"--node-lease-duration-seconds=" + strconv.Itoa(NodeLeaseSeconds),
		}},
	}, nil
}

// Cluster is the scheduler, the controller manager and kwok running as
// children of this process, and the nodes.
type Cluster struct {
	// Nodes are the simulated nodes.
	Nodes []Node
	// Dir holds the logs.
	Dir string
	// PodCIDR is where the pods' IPs come from: a range no other cluster
	// on this machine holds while this one runs (ClaimPodRange).
	PodCIDR string

	// Ports are the TCP ports the processes listen at on 127.0.0.1 (the
	// scheduler's, and the LWS operator's webhook server's when it runs),
	// claimed for them (ClaimPort) until Stop.
	Ports []int

	procs   []*exec.Cmd
	exited  []chan error
	tempDir bool
	pods    *PodRange
	ports   []*hostlock.Port
	// cl is set once the LWS operator's webhooks may be installed: Stop
	// removes them.
	cl client.Client
}

// Start registers the nodes, starts the processes against cfg's API server
// and waits until the nodes are Ready, the scheduler answers and the
// controller manager has made a namespace's default ServiceAccount.
func Start(cfg *rest.Config, o Options) (*Cluster, error) {
	if o.AssetsDir == "" {
		o.AssetsDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if o.AssetsDir == "" {
		return nil, errors.New("kwok cluster: set KUBEBUILDER_ASSETS to the folder `bash hack/setup-test-assets.sh cluster` prints")
	}
	if o.Nodes == nil {
		o.Nodes = DefaultNodes()
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = time.Minute
	}
	c := &Cluster{Nodes: o.Nodes, Dir: o.Dir}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "kwokcluster-")
		if err != nil {
			return nil, fmt.Errorf("kwok cluster: %w", err)
		}
		c.Dir, c.tempDir = dir, true
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), lwsv1.AddToScheme(scheme)); err != nil {
		return nil, errors.Join(fmt.Errorf("kwok cluster: %w", err), c.Stop())
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("kwok cluster: %w", err), c.Stop())
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.StartTimeout)
	defer cancel()
	if err := CreateNodes(ctx, cl, o.Nodes); err != nil {
		return nil, errors.Join(fmt.Errorf("kwok cluster: %w", err), c.Stop())
	}
	port, err := c.claimPort()
	if err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	if c.pods, err = ClaimPodRange(); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	c.PodCIDR = c.pods.CIDR
	procs, err := Processes(cfg, o.AssetsDir, c.Dir, port, c.PodCIDR)
	if err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	for _, p := range procs {
		if err := c.run(p); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	if err := Wait(ctx, cl, o.Nodes, port, c.exitedEarly); err != nil {
		return nil, errors.Join(fmt.Errorf("%w (logs in %s)", err, c.Dir), c.Stop())
	}
	if o.LWS {
		if err := c.startLWS(ctx, cfg, cl, o.AssetsDir); err != nil {
			return nil, errors.Join(fmt.Errorf("%w (logs in %s)", err, c.Dir), c.Stop())
		}
	}
	return c, nil
}

// startLWS runs the LeaderWorkerSet operator, installs its webhooks and
// waits until the API server reaches them.
func (c *Cluster) startLWS(ctx context.Context, cfg *rest.Config, cl client.Client, assetsDir string) error {
	port, err := c.claimPort()
	if err != nil {
		return err
	}
	l, err := PrepareLWS(cfg, assetsDir, c.Dir, port)
	if err != nil {
		return err
	}
	if err := c.run(l.Process); err != nil {
		return err
	}
	c.cl = cl
	if err := l.InstallWebhooks(ctx, cl); err != nil {
		return err
	}
	return WaitLWS(ctx, cl, c.exitedEarly)
}

// run starts p as a child that dies with this process.
func (c *Cluster) run(p Process) error {
	log, err := os.Create(p.Log)
	if err != nil {
		return fmt.Errorf("kwok cluster: %w", err)
	}
	defer log.Close() // the child has its own copy
	cmd := exec.Command(p.Args[0], p.Args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kwok cluster: start %s: %w", p.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	c.procs, c.exited = append(c.procs, cmd), append(c.exited, done)
	return nil
}

// Wait polls, until ctx ends, until the cluster works: every node is
// Ready, the scheduler's /readyz answers on schedulerPort,
// kube-controller-manager has made a new namespace's default
// ServiceAccount, and kwok has run a pod, alone, at an IP of its own
// (firstPod). alive, if not nil, is asked each round and ends the wait
// with its error (a process that exited).
func Wait(ctx context.Context, cl client.Client, nodes []Node, schedulerPort int, alive func() error) error {
	probe := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kwokcluster-probe-"}}
	if err := cl.Create(ctx, probe); err != nil {
		return fmt.Errorf("kwok cluster: create a probe namespace: %w", err)
	}
	httpc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// The scheduler's self-signed certificate, on loopback.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a health check of our own child on 127.0.0.1
	}}
	readyz := fmt.Sprintf("https://127.0.0.1:%d/readyz", schedulerPort)
	last := errors.New("not checked yet")
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if alive != nil {
			if err := alive(); err != nil {
				return false, err
			}
		}
		if last = nodesReady(ctx, cl, nodes); last != nil {
			return false, nil
		}
		if last = get(ctx, httpc, readyz); last != nil {
			last = fmt.Errorf("kube-scheduler %s: %w", readyz, last)
			return false, nil
		}
		sa := &corev1.ServiceAccount{}
		if last = cl.Get(ctx, client.ObjectKey{Namespace: probe.Name, Name: "default"}, sa); last != nil {
			last = fmt.Errorf("kube-controller-manager has not made the ServiceAccount default in namespace %s yet: %w", probe.Name, last)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("kwok cluster: not working in time: %w", last)
	}
	if len(nodes) > 0 {
		if err := firstPod(ctx, cl, probe.Name, nodes[0].Name, alive); err != nil {
			return err
		}
	}
	// The namespace controller removes it, and the pod, in the background.
	if err := cl.Delete(ctx, probe); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kwok cluster: delete the probe namespace: %w", err)
	}
	return nil
}

// firstPod has kwok run one pod alone, on the node, in the namespace, and
// waits until it has an IP. kwok (v0.7.0 as v0.8.0) makes its pool of pod
// IPs for a range the first time it plays a pod of that range, and nothing
// orders two first times (PodController.ipPool: a Load, then a Store, of a
// sync.Map): two pods played at once on a new cluster, as a Deployment's
// replicas are, can each make a pool and both get its first IP. Two pods
// at one address are one model server (test/modelserver cannot listen for
// the second), so a test that creates a Deployment first saw one pod
// answer for both. After this pod, every pod takes its IP from the one
// pool, under its lock.
func firstPod(ctx context.Context, cl client.Client, namespace, node string, alive func() error) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "first-pod"},
		Spec: corev1.PodSpec{
			NodeName: node, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "probe", Image: "kwok.invalid/odh-serving/first-pod:v1"}},
		},
	}
	if err := cl.Create(ctx, pod); err != nil {
		return fmt.Errorf("kwok cluster: create pod %s/%s: %w", namespace, pod.Name, err)
	}
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if alive != nil {
			if err := alive(); err != nil {
				return false, err
			}
		}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, nil //nolint:nilerr // polled again
		}
		return pod.Status.PodIP != "", nil
	})
	if err != nil {
		return fmt.Errorf("kwok cluster: kwok did not run pod %s/%s on node %s in time (phase %q): %w", namespace, pod.Name, node, pod.Status.Phase, err)
	}
	// Gone at once (kwok gives its IP back), so that no test or table of
	// pods sees it.
	if err := cl.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kwok cluster: delete pod %s/%s: %w", namespace, pod.Name, err)
	}
	return nil
}

func (c *Cluster) exitedEarly() error {
	for i, done := range c.exited {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("kwok cluster: %s exited: %w; the end of %s:\n%s", filepath.Base(c.procs[i].Path), err, c.procs[i].Path, tail(logOf(c.procs[i])))
		default:
		}
	}
	return nil
}

func logOf(cmd *exec.Cmd) string {
	if f, ok := cmd.Stdout.(*os.File); ok {
		return f.Name()
	}
	return ""
}

// tail returns the last 20 lines of the file at path.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// claimPort claims a TCP port for a process of the cluster to listen at,
// among this machine's processes (hostlock.ClaimPort), until Stop. It is
// from a range the kernel never hands out: a port asked of the kernel and
// closed again, as these were before, could be handed to any process of
// the machine (another test package's etcd, kube-apiserver or client)
// before the process bound it; the process then exited ("bind: address
// already in use") and the cluster did not start.
func (c *Cluster) claimPort() (int, error) {
	p, err := hostlock.ClaimPort()
	if err != nil {
		return 0, fmt.Errorf("kwok cluster: %w", err)
	}
	c.ports, c.Ports = append(c.ports, p), append(c.Ports, p.Number)
	return p.Number, nil
}

// PIDs are the processes' ids: kube-scheduler's, kube-controller-manager's,
// kwok's and the LWS operator's when it runs, for a benchmark that counts
// their CPU apart.
func (c *Cluster) PIDs() []int {
	pids := make([]int, 0, len(c.procs))
	for _, cmd := range c.procs {
		pids = append(pids, cmd.Process.Pid)
	}
	return pids
}

// Stop removes the LWS operator's webhook configurations, ends the
// processes (SIGTERM, then SIGKILL after 5 s), gives up the pod range and
// the ports and removes a temporary folder. The nodes stay registered; the API server
// usually goes next.
func (c *Cluster) Stop() error {
	var errs []error
	if c.cl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, UninstallLWSWebhooks(ctx, c.cl))
		cancel()
		c.cl = nil
	}
	for _, cmd := range c.procs {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	for i, cmd := range c.procs {
		select {
		case <-c.exited[i]:
		case <-time.After(5 * time.Second):
			if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				errs = append(errs, fmt.Errorf("kwok cluster: kill %s: %w", cmd.Path, err))
			}
			<-c.exited[i]
		}
	}
	c.procs, c.exited = nil, nil
	errs = append(errs, c.pods.Release())
	c.pods = nil
	for _, p := range c.ports {
		errs = append(errs, p.Release())
	}
	c.ports, c.Ports = nil, nil
	if c.tempDir {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}
