package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/gateway"
	"github.com/opendatahub-io/odh-serving/test/hostlock"
	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
	"github.com/opendatahub-io/odh-serving/test/localcluster"
	"github.com/opendatahub-io/odh-serving/test/localcluster/detach"
)

// Names the demo uses; the chart fixes the names of what it makes.
const (
	systemNamespace = "opendatahub"
	crdsRelease     = "odh-serving-crds"
	release         = "odh-serving"
	crdsChart       = "charts/odh-serving-crds"
	chart           = "charts/odh-serving"
	valuesFile      = "test/demo/values-demo.yaml"
	webhookService  = "odh-serving-webhook"
	// The upgrade of step 11: llama-pd's decode replicas.
	upgradeService  = "llama-pd"
	upgradeReplicas = 3
	// stateFile records the processes a DEMO_KEEP=1 run leaves running.
	stateFile    = "demo.json"
	dataplaneLog = "dataplane.log"
	// partOf is the label every child of a service carries.
	partOf = "app.kubernetes.io/part-of"
)

// outcome is what a run achieved, for the integration test.
type outcome struct {
	// Services by namespace/name, as step 7 left them.
	Services map[string]serviceState
	// Objects counts each service's children by kind (step 7).
	Objects map[string]map[string]int
	// DecodeBefore and DecodeAfter are the decode Deployment's replicas
	// around step 11's helm upgrade; DecodeReady its ready replicas after.
	DecodeBefore, DecodeAfter, DecodeReady int32
	// UpgradedReady says the upgraded service was Ready again for its new
	// generation.
	UpgradedReady bool
	// ScaledBefore and ScaledAfter are the autoscaled Deployment's replicas
	// before step 12's HPA and after the controller reconciled its scale;
	// ScaledGenerationKept says the controller did not write the
	// Deployment meanwhile, ScaledReplicasOwners are the field managers
	// that own its spec.replicas (the demo's, which wrote the HPA's
	// decision, alone).
	ScaledBefore, ScaledAfter int32
	ScaledGenerationKept      bool
	ScaledReplicasOwners      []string
	// Webhooks says the API server reached the controller's webhook.
	Webhooks bool
	// MaaS is what step 13 showed; nil when it was skipped.
	MaaS *maasOutcome
	// Requests is what steps 8 and 9 showed.
	Requests *requestsOutcome
	// Auth is what step 10 showed.
	Auth *authOutcome
	// GPU is what steps 14 to 16 showed.
	GPU     *gpuOutcome
	Elapsed time.Duration
}

type serviceState struct {
	Ready bool
	Phase string
	URL   string
}

// demo is one run of the seventeen steps (run lists them).
type demo struct {
	*runner
	out *outcome

	assets, odh, helm string
	kubeconfig        string
	restCfg           *rest.Config
	c                 client.Client
	services          []serviceRef
	webhooks          bool
	// loopbackSets turn the webhooks and MaaS off in the odh-serving
	// chart's values when this machine has no address but loopback.
	loopbackSets     []string
	healthPort       int
	controller       *os.Process
	controllerExited <-chan error
	// apiServer is the MaaS API server's process; nil without MaaS.
	apiServer    *os.Process
	dataplanePID int
	// clusterPIDs are kube-scheduler's, kube-controller-manager's, kwok's
	// and the LWS operator's (test/kwokcluster).
	clusterPIDs []int
	// podCIDR is the pod range kwok hands out, claimed for this run.
	podCIDR string
	// lastStatus is the status table printed last.
	lastStatus string
	// dataplaneLog receives the in-process data plane's lines (test gateway, model servers, endpoint pickers).
	dataplaneLog *os.File
}

type serviceRef struct{ Namespace, Name string }

func (s serviceRef) String() string { return s.Namespace + "/" + s.Name }

// runDemo runs the demo. Unless it keeps its environment, everything it
// started is stopped before it returns, also on failure.
func runDemo(ctx context.Context, cfg config) (*outcome, error) {
	if cfg.Keep && !cfg.Detached {
		return nil, errors.New("keeping the environment needs detached processes")
	}
	d := &demo{runner: &runner{cfg: cfg, start: time.Now()}, out: &outcome{}}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", cfg.Dir, err)
	}
	// One live run per folder: another would stop this one's processes as
	// leftovers. A kept environment's processes do not hold the folder,
	// so the next run stops them.
	folder, err := claimFolder(cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = folder.Release() }()
	// controller-runtime's own log lines (the in-process simulated data
	// plane's) go to its log file; the demo prints progress only. A kept
	// data plane runs as a process of its own and writes the file itself.
	logSink := io.Discard
	if !cfg.Keep {
		logFile, err := os.Create(filepath.Join(cfg.Dir, dataplaneLog))
		if err != nil {
			return nil, fmt.Errorf("create the data plane's log: %w", err)
		}
		defer logFile.Close()
		d.dataplaneLog, logSink = logFile, logFile
	}
	crlog.SetLogger(zap.New(zap.WriteTo(logSink)))
	err = d.run(ctx)
	d.out.Elapsed = d.elapsed()
	if cfg.Keep {
		if err != nil {
			fmt.Fprintf(cfg.Out, "\nThe environment stays for inspection (DEMO_KEEP=1); stop it with `go run ./test/demo down`.\n")
		}
		return d.out, err
	}
	if tdErr := d.tearDown(); tdErr != nil {
		err = errors.Join(err, fmt.Errorf("tear down: %w", tdErr))
	}
	return d.out, err
}

func (d *demo) run(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		d.build, d.startCluster, d.installCharts, d.runController, d.deployServices,
		d.startDataPlane, d.watchStatus, d.requests, d.migrate, d.auth, d.upgrade, d.autoscale, d.maas,
		d.gpuServices, d.gpuFix, d.garbageCollect, d.finish,
	} {
		if err := step(ctx); err != nil {
			return fmt.Errorf("step %d: %w", d.step, err)
		}
	}
	return nil
}

// 1. Build odh-serving; build (the first time) or reuse etcd, kube-apiserver
// and helm, and kubectl for a kept environment.
func (d *demo) build(ctx context.Context) error {
	tools, args := []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kwok", "lws-controller", "helm", "epp"}, []string{"demo"}
	if d.cfg.Keep {
		tools, args = append(tools, "kubectl"), append(args, "kubectl")
	}
	d.header(fmt.Sprintf("Build odh-serving; build %s the first time, then reuse them (hack/setup-test-assets.sh %s)",
		andList(tools), strings.Join(args, " ")))
	for _, p := range []string{crdsChart, chart} {
		if _, err := os.Stat(filepath.Join(d.cfg.Root, p, "Chart.yaml")); err != nil {
			return fmt.Errorf("the chart %s is missing (the CHART task provides it): %w", p, err)
		}
	}
	d.odh = d.cfg.Binary
	if d.odh == "" {
		d.odh = filepath.Join(d.cfg.Root, "bin", "odh-serving")
	}
	// -ldflags=-w: no DWARF (a debugger's tables; stack traces and profiles
	// do not need them), a third less CPU for the link.
	if d.cfg.Built {
		d.say("odh-serving: %s, built already", d.rel(d.odh))
	} else if _, err := d.command(ctx, nil, "go", "build", "-ldflags=-w", "-o", d.odh, "./cmd/odh-serving"); err != nil {
		return err
	}
	for _, sub := range []string{"controller", "status"} {
		if out, err := d.quiet(ctx, d.odh, sub, "--help"); err != nil || !strings.Contains(out, "Usage:") {
			return fmt.Errorf("bin/odh-serving has no %q command (the CONTROLLER task provides it): %w", sub, err)
		}
	}
	assets, err := testAssets(ctx, d.cfg.Root, &indented{w: d.cfg.Out, prefix: "           ", bol: true}, args, tools)
	if err != nil {
		return err
	}
	d.assets, d.helm = assets, filepath.Join(assets, "helm")
	d.say("tools in %s", d.rel(assets))
	return nil
}

// 2. Start the local cluster.
func (d *demo) startCluster(ctx context.Context) error {
	d.header("Start the cluster on loopback: kube-apiserver and etcd, kube-scheduler, kube-controller-manager, kwok's simulated GPU nodes (no CRDs yet)")
	opts := localcluster.Options{Dir: d.cfg.Dir, AssetsDir: d.assets}
	d.onTeardown(func() error {
		if err := os.Remove(filepath.Join(d.cfg.Dir, stateFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the demo's state: %w", err)
		}
		return nil
	})
	if d.cfg.Detached {
		if err := d.stopLeftovers(); err != nil {
			return err
		}
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this program: %w", err)
		}
		st, err := localcluster.Up(ctx, opts, []string{self, "devcluster", "serve", "--dir", d.cfg.Dir, "--assets", d.assets})
		if err != nil {
			return err
		}
		d.onTeardown(func() error { return localcluster.Down(d.cfg.Dir) })
		d.kubeconfig = st.Kubeconfig
		d.say("API server %s (supervisor pid %d, etcd pid %d, kube-apiserver pid %d)", st.APIServerURL, st.SupervisorPID, st.EtcdPID, st.APIServerPID)
	} else {
		c, err := localcluster.Start(opts)
		if err != nil {
			return err
		}
		d.onTeardown(c.Stop)
		d.kubeconfig = c.Kubeconfig
		d.say("API server %s", c.APIServerURL())
	}
	d.say("kubeconfig %s", d.rel(d.kubeconfig))
	cfg, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", d.kubeconfig, err)
	}
	scheme, err := controlplane.NewScheme()
	if err != nil {
		return err
	}
	// A local API server: no need for client-go's 5 requests a second.
	cfg.QPS, cfg.Burst = 200, 400
	d.restCfg = cfg
	d.c, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	return d.startWorkloadHalf(ctx)
}

// startWorkloadHalf registers kwok's nodes and starts kube-scheduler,
// kube-controller-manager and kwok as detached processes (a kept
// environment keeps them), then waits until they work.
func (d *demo) startWorkloadHalf(ctx context.Context) error {
	schedulerPort, err := d.claimPort()
	if err != nil {
		return err
	}
	port := schedulerPort.Number
	// Another cluster on this machine (a test package's) must not hand
	// out the same pod IPs: the model servers listen at them.
	pods, err := kwokcluster.ClaimPodRange()
	if err != nil {
		return err
	}
	d.onTeardown(pods.Release)
	d.podCIDR = pods.CIDR
	procs, err := kwokcluster.Processes(d.restCfg, d.assets, filepath.Join(d.cfg.Dir, "kwokcluster"), port, pods.CIDR)
	if err != nil {
		return err
	}
	nodes := kwokcluster.DefaultNodes()
	if err := kwokcluster.CreateNodes(ctx, d.c, nodes); err != nil {
		return err
	}
	var exited []<-chan error
	for _, p := range procs {
		var inherit []*os.File
		switch p.Name {
		case "kwok":
			// A kept kwok holds the range after this run ends.
			inherit = append(inherit, pods.File())
		case "kube-scheduler":
			inherit = append(inherit, schedulerPort.File())
		}
		proc, done, err := detach.Start(p.Args, nil, p.Log, inherit...)
		if err != nil {
			return err
		}
		d.clusterPIDs, exited = append(d.clusterPIDs, proc.Pid), append(exited, done)
		d.onTeardown(stopProcess(proc, d.cfg.Dir))
		d.say("%s pid %d, log %s", p.Name, proc.Pid, d.rel(p.Log))
	}
	if err := d.saveState(); err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	if err := kwokcluster.Wait(waitCtx, d.c, nodes, port, d.anyExited(procs, exited)); err != nil {
		return err
	}
	d.say("controllers: %s", strings.Join(kwokcluster.Controllers, ", "))
	d.say("nodes Ready (simulated by kwok, labelled %s=kwok; no container runs):", kwokcluster.TypeLabel)
	table, err := nodeTable(ctx, d.c)
	if err != nil {
		return err
	}
	d.block(table)
	return nil
}

// claimFolder claims dir among the processes of this machine
// (test/hostlock) for this run.
func claimFolder(dir string) (*hostlock.Lock, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", dir, err)
	}
	sum := sha256.Sum256([]byte(abs))
	l, err := hostlock.Try(hostlock.Dir(), "demo-"+hex.EncodeToString(sum[:8]))
	if err != nil {
		return nil, fmt.Errorf("another demo runs in %s (a second run would stop its processes): wait until it ends: %w", dir, err)
	}
	return l, nil
}

// stopLeftovers stops what an earlier DEMO_KEEP=1 run, or a run that was
// killed before it could tear down, left in the folder.
func (d *demo) stopLeftovers() error {
	_, errDemo := os.Stat(filepath.Join(d.cfg.Dir, stateFile))
	_, errCluster := os.Stat(filepath.Join(d.cfg.Dir, localcluster.StateFile))
	if errDemo != nil && errCluster != nil {
		return nil
	}
	d.say("stopping what an earlier run left in %s", d.rel(d.cfg.Dir))
	return down(d.cfg.Dir, nil)
}

// saveState records the processes started so far, so `down` (or the next
// run) can stop them even if this run is killed.
func (d *demo) saveState() error {
	st := keptState{DataPlanePID: d.dataplanePID, ClusterPIDs: d.clusterPIDs, Dir: d.cfg.Dir}
	if d.controller != nil {
		st.ControllerPID = d.controller.Pid
	}
	if d.apiServer != nil {
		st.APIServerPID = d.apiServer.Pid
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("record the demo's processes: %w", err)
	}
	if err := os.WriteFile(filepath.Join(d.cfg.Dir, stateFile), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("record the demo's processes: %w", err)
	}
	return nil
}

// helmEnv keeps helm's cache and configuration under bin/demo, away from
// the user's own.
func (d *demo) helmEnv() []string {
	h := filepath.Join(d.cfg.Dir, "helm")
	return []string{"HELM_CACHE_HOME=" + filepath.Join(h, "cache"), "HELM_CONFIG_HOME=" + filepath.Join(h, "config"), "HELM_DATA_HOME=" + filepath.Join(h, "data")}
}

func (d *demo) helmArgs(args ...string) []string {
	return append(args, "--kubeconfig", d.kubeconfig)
}

// chartArgs is helmArgs for an install or upgrade of the odh-serving
// chart: on a machine with no address but loopback, with the webhooks and
// MaaS off, on every upgrade as on the install.
func (d *demo) chartArgs(args ...string) []string {
	return append(d.helmArgs(args...), d.loopbackSets...)
}

// 3. helm install both charts.
func (d *demo) installCharts(ctx context.Context) error {
	d.header("helm install odh-serving-crds, start the LeaderWorkerSet operator, then helm install odh-serving (controller mode)")
	var webhookSet []string
	if ip, err := d.hostIP(); err != nil {
		d.say("no webhooks and no MaaS API server: %v; both charts get webhook.enabled=false (odh-serving, on every install and upgrade, maas.enabled=false too) and the controller --disable-webhooks", err)
		// The CRDs chart has no MaaS (its schema refuses the key); every
		// install and upgrade of the other chart gets both (chartArgs).
		webhookSet = []string{"--set", "webhook.enabled=false"}
		d.loopbackSets = []string{"--set", "webhook.enabled=false", "--set", "maas.enabled=false"}
	} else {
		d.webhooks = true
		d.say("webhooks on: the API server will reach the controller through the webhook Service at %s (step 4), and the MaaS API server through its APIService", ip)
	}
	d.out.Webhooks = d.webhooks
	crdsArgs := d.helmArgs("install", crdsRelease, filepath.Join(d.cfg.Root, crdsChart), "--namespace", systemNamespace, "--create-namespace",
		"--set", "createGatewayAPICRDs=true", "--set", "createLWSCRDs=true")
	if _, err := d.command(ctx, d.helmEnv(), d.helm, append(crdsArgs, webhookSet...)...); err != nil {
		return err
	}
	n, err := d.waitCRDsEstablished(ctx)
	if err != nil {
		return err
	}
	d.say("%d CRDs established (ours, GIE v1 and v1alpha2, Gateway API, LeaderWorkerSet)", n)
	if err := d.startLWS(ctx); err != nil {
		return err
	}
	args := d.chartArgs("install", release, filepath.Join(d.cfg.Root, chart), "--namespace", systemNamespace,
		"-f", filepath.Join(d.cfg.Root, valuesFile), "--set", "services=null")
	if _, err := d.command(ctx, d.helmEnv(), d.helm, args...); err != nil {
		return err
	}
	presets := &v1alpha2.LLMInferenceServiceConfigList{}
	if err := d.c.List(ctx, presets, client.InNamespace(systemNamespace)); err != nil {
		return fmt.Errorf("list the shipped presets: %w", err)
	}
	dep := &appsv1.Deployment{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: "odh-serving-controller"}, dep); err != nil {
		return fmt.Errorf("read the chart's controller Deployment: %w", err)
	}
	d.say("%d presets in %s, Gateway kserve-ingress-gateway, the webhook configuration, RBAC, Deployment odh-serving-controller at %d replicas; services come in step 5",
		len(presets.Items), systemNamespace, ptrDeref(dep.Spec.Replicas))
	if d.webhooks {
		d.say("MaaS: the tier ConfigMap tier-to-group-mapping (free, premium, enterprise) and their namespaces, APIService %s, the API server's RBAC", apiServiceName)
	}
	return nil
}

func (d *demo) waitCRDsEstablished(ctx context.Context) (int, error) {
	n := 0
	err := d.poll(ctx, "CRDs established", 200*time.Millisecond, func() (bool, error) {
		list := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := d.c.List(ctx, list); err != nil {
			return false, fmt.Errorf("list CRDs: %w", err)
		}
		n = len(list.Items)
		for i := range list.Items {
			established := false
			for _, c := range list.Items[i].Status.Conditions {
				established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
			}
			if !established {
				return false, nil
			}
		}
		return n > 0, nil
	})
	return n, err
}

// claimPort claims a TCP port for a process the demo starts
// (hostlock.ClaimPort), from a range the kernel never hands out: a port
// asked of the kernel and closed again could be handed to any process of
// the machine before the process bound it. The demo holds it until
// teardown; give the process Port.File to inherit (detach.Start), so that
// a kept one holds it after the demo ends.
func (d *demo) claimPort() (*hostlock.Port, error) {
	p, err := hostlock.ClaimPort()
	if err != nil {
		return nil, err
	}
	d.onTeardown(p.Release)
	return p, nil
}

// routeHere points port portName of the Service systemNamespace/service at
// a port of this machine claimed for a process the demo runs here rather
// than in a Pod (claimPort). It returns that port and this machine's
// address.
func (d *demo) routeHere(ctx context.Context, service, portName string) (*hostlock.Port, net.IP, error) {
	port, err := d.claimPort()
	if err != nil {
		return nil, nil, err
	}
	if err := localcluster.RouteServiceToHost(ctx, d.c, systemNamespace, service, portName, int32(port.Number)); err != nil {
		return nil, nil, err
	}
	ip, err := d.hostIP()
	if err != nil {
		return nil, nil, err
	}
	return port, ip, nil
}

// errLoopbackOnly is hostIP's error when the run plays a machine with no
// address but loopback (config.LoopbackOnly).
var errLoopbackOnly = errors.New("this run plays a machine with no address but loopback (LoopbackOnly)")

// hostIP is this machine's address that the API server can reach
// (localcluster.HostIP), or an error when there is none.
func (d *demo) hostIP() (net.IP, error) {
	if d.cfg.LoopbackOnly {
		return nil, errLoopbackOnly
	}
	return localcluster.HostIP()
}

// 4. Run the controller as a local process.
func (d *demo) runController(ctx context.Context) error {
	d.header("Run odh-serving controller on this machine (no kubelet runs the chart's Deployment)")
	health, err := d.claimPort()
	if err != nil {
		return err
	}
	d.healthPort = health.Number
	inherit := []*os.File{health.File()}
	args := []string{d.odh, "controller", "--kubeconfig", d.kubeconfig, "--system-namespace", systemNamespace,
		"--leader-elect=false", "--metrics-bind-address", ":0", "--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(d.healthPort)}
	if d.webhooks {
		port, ip, err := d.routeHere(ctx, webhookService, "webhook")
		if err != nil {
			return err
		}
		d.say("EndpointSlice %s-localhost: Service %s/%s -> %s:%d, this machine", webhookService, systemNamespace, webhookService, ip, port.Number)
		args = append(args, "--webhook-port", strconv.Itoa(port.Number), "--webhook-cert-dir", filepath.Join(d.cfg.Dir, "webhook-certs"), "--maas")
		inherit = append(inherit, port.File())
	} else {
		args = append(args, "--disable-webhooks")
	}
	logPath := filepath.Join(d.cfg.Dir, "controller.log")
	d.say("$ %s  > %s", d.commandLine(args[0], args[1:]), d.rel(logPath))
	proc, exited, err := detach.Start(args, nil, logPath, inherit...)
	if err != nil {
		return err
	}
	d.controller, d.controllerExited = proc, exited
	d.onTeardown(stopProcess(proc, d.cfg.Dir))
	if err := d.saveState(); err != nil {
		return err
	}
	if err := d.waitControllerReady(ctx, logPath); err != nil {
		return err
	}
	d.say("pid %d, /readyz answers", proc.Pid)
	if !d.webhooks {
		return nil
	}
	if err := d.waitWebhook(ctx, logPath); err != nil {
		return err
	}
	d.say("the API server reaches the validating webhook: a server-side dry-run create of a service passed it")
	return d.startAPIServer(ctx)
}

func (d *demo) controllerGone(logPath string) error {
	select {
	case err := <-d.controllerExited:
		if err == nil {
			err = errors.New("exit status 0")
		}
		return fmt.Errorf("the controller exited (%w); %s ends with:\n%s", err, d.rel(logPath), tailFile(logPath))
	default:
		return nil
	}
}

func (d *demo) waitControllerReady(ctx context.Context, logPath string) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", d.healthPort)
	return d.poll(ctx, "controller /readyz", 200*time.Millisecond, func() (bool, error) {
		if err := d.controllerGone(logPath); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// waitWebhook waits until a dry-run create passes the validating webhook:
// the controller serves it and has injected its CA.
func (d *demo) waitWebhook(ctx context.Context, logPath string) error {
	var last error
	err := d.poll(ctx, "validating webhook", 300*time.Millisecond, func() (bool, error) {
		if err := d.controllerGone(logPath); err != nil {
			return false, err
		}
		probe := &v1alpha2.LLMInferenceService{
			ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe", Namespace: systemNamespace},
			Spec:       v1alpha2.LLMInferenceServiceSpec{Model: v1alpha2.LLMModelSpec{Name: ptrTo("probe")}},
		}
		last = d.c.Create(ctx, probe, client.DryRunAll)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w; last answer: %w", err, last)
	}
	return err
}

func ptrTo[T any](v T) *T { return &v }

// 5. Deploy the services with helm upgrade.
func (d *demo) deployServices(ctx context.Context) error {
	d.header("Deploy three services from the CPU presets: helm upgrade -f " + valuesFile)
	services, err := readServices(filepath.Join(d.cfg.Root, valuesFile))
	if err != nil {
		return err
	}
	d.services = services
	namespaces := map[string]bool{}
	for _, s := range services {
		namespaces[s.Namespace] = true
	}
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		err := d.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		d.say("namespace %s (the team's)", ns)
	}
	if _, err := d.command(ctx, d.helmEnv(), d.helm, d.chartArgs("upgrade", release, filepath.Join(d.cfg.Root, chart),
		"--namespace", systemNamespace, "-f", filepath.Join(d.cfg.Root, valuesFile))...); err != nil {
		return err
	}
	// The controller has seen each service once it reports on it.
	err = d.poll(ctx, "the controller reports on every service", 300*time.Millisecond, func() (bool, error) {
		for _, s := range d.services {
			svc := &v1alpha2.LLMInferenceService{}
			if err := d.c.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, svc); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			if svc.Status.ObservedGeneration != svc.Generation || meta.FindStatusCondition(svc.Status.Conditions, v1alpha2.ConditionReady) == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return errors.Join(err, d.controllerGone(filepath.Join(d.cfg.Dir, "controller.log")))
	}
	out, err := d.status(ctx)
	if err != nil {
		return err
	}
	d.say("before the test gateway starts no route is accepted, so nothing is Ready:")
	d.block(out)
	d.lastStatus = out
	return nil
}

// readServices lists the services of the demo's values file.
func readServices(path string) ([]serviceRef, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var values struct {
		Services map[string]struct {
			Namespace string `json:"namespace"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	out := make([]serviceRef, 0, len(values.Services))
	for name, s := range values.Services {
		ns := s.Namespace
		if ns == "" {
			ns = systemNamespace // the release namespace
		}
		out = append(out, serviceRef{Namespace: ns, Name: name})
	}
	slices.SortFunc(out, func(a, b serviceRef) int { return strings.Compare(a.String(), b.String()) })
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no services", path)
	}
	return out, nil
}

func (d *demo) status(ctx context.Context) (string, error) {
	out, err := d.quiet(ctx, d.odh, "status", "-A", "--kubeconfig", d.kubeconfig)
	if err != nil {
		return "", fmt.Errorf("odh-serving status -A: %w", err)
	}
	return out, nil
}

// 6. Start the rest of the data plane: the test gateway, model servers and
// endpoint pickers.
func (d *demo) startDataPlane(ctx context.Context) error {
	d.header("Start the rest of the data plane: the test gateway, model servers and GIE's endpoint pickers (test tooling but the pickers)")
	if err := d.setPoolGroups(ctx, build.GroupPoolV1alpha2); err != nil {
		return err
	}
	logPath := filepath.Join(d.cfg.Dir, dataplaneLog)
	if d.cfg.Keep {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this program: %w", err)
		}
		proc, _, err := detach.Start([]string{self, "dataplane", "--kubeconfig", d.kubeconfig, "--epp", d.epp(), "--dir", d.pickersDir()}, nil, logPath)
		if err != nil {
			return err
		}
		d.dataplanePID = proc.Pid
		d.onTeardown(stopProcess(proc, d.cfg.Dir))
		if err := d.saveState(); err != nil {
			return err
		}
	} else {
		dp, err := newDataPlane(d.restCfg, d.epp(), d.pickersDir(), d.dataplaneLog)
		if err != nil {
			return err
		}
		dpCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan error, 1)
		go func() { done <- dp.Start(dpCtx) }()
		d.onTeardown(func() error {
			cancel()
			return <-done
		})
	}
	d.say("workloads are real: kube-controller-manager makes the Deployments' ReplicaSets and Pods, the LWS operator the LeaderWorkerSets' StatefulSets (and kube-controller-manager their Pods), kube-scheduler places them, kwok runs them")
	d.say("Gateways: the test gateway listens for each at a loopback address of its own (from %s), writes it to the Gateway's status, and reports on routes and pools what it observes", gateway.DefaultFirstAddress)
	d.say("  %s/%s serves v1alpha2 InferencePools only (annotation %s), as a gateway from before GIE v1 does: the routes stay dual", systemNamespace, ingressGateway, gateway.PoolGroupsAnnotation)
	d.say("model servers: test/modelserver answers at each Running workload pod's IP (kwok's, from %s, a range no other cluster on this machine holds) and port, as the pod", d.podCIDR)
	d.say("endpoint pickers: GIE's epp, a process per Running endpoint picker pod, with the pod's arguments (its configuration adapted, its ports claimed for it from %d-%d, which the kernel never hands out), as the pod's ServiceAccount, over TLS with the controller's certificate; logs in %s", hostlock.FirstPort, hostlock.LastPort, d.rel(d.pickersDir()))
	d.say("log: %s", d.rel(logPath))
	return nil
}

func (d *demo) epp() string { return filepath.Join(d.assets, "epp") }

func (d *demo) pickersDir() string { return filepath.Join(d.cfg.Dir, "endpoint-pickers") }

// 7. Watch the status until every service is Ready on the v1 pool.
func (d *demo) watchStatus(ctx context.Context) error {
	d.header("Watch `odh-serving status -A` until every service is Ready (dual: the gateway routes to v1alpha2 pools only)")
	err := d.poll(ctx, "services Ready on dual", 500*time.Millisecond, func() (bool, error) {
		// The states first: the table printed after them shows at least
		// as much progress, so the last table printed is the final one.
		states, err := d.serviceStates(ctx)
		if err != nil {
			return false, err
		}
		d.out.Services = states
		out, err := d.status(ctx)
		if err != nil {
			return false, err
		}
		if out != d.lastStatus {
			d.say("[%6.1fs]", d.elapsed().Seconds())
			d.block(out)
			d.lastStatus = out
		}
		for _, s := range states {
			if !s.Ready || s.Phase != "dual" {
				return false, nil
			}
		}
		return len(states) == len(d.services), nil
	})
	if err != nil {
		return errors.Join(err, d.controllerGone(filepath.Join(d.cfg.Dir, "controller.log")))
	}
	objects, err := d.objectsByService(ctx)
	if err != nil {
		return err
	}
	d.out.Objects = objects
	d.say("what each service got, by kind (children labelled %s=llminferenceservice):", partOf)
	d.block(objectTable(objects, d.services))
	table, err := nodeTable(ctx, d.c)
	if err != nil {
		return err
	}
	d.say("where their pods run (CPU presets: no GPU asked for, so the scheduler spreads them over every node):")
	d.block(table)
	return nil
}

func (d *demo) serviceStates(ctx context.Context) (map[string]serviceState, error) {
	out := map[string]serviceState{}
	for _, s := range d.services {
		svc := &v1alpha2.LLMInferenceService{}
		if err := d.c.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, svc); err != nil {
			return nil, fmt.Errorf("read service %s: %w", s, err)
		}
		st := serviceState{
			Ready: meta.IsStatusConditionTrue(svc.Status.Conditions, v1alpha2.ConditionReady) && svc.Status.ObservedGeneration == svc.Generation,
			URL:   svc.Status.URL,
		}
		if svc.Status.InferencePool != nil {
			st.Phase = svc.Status.InferencePool.MigrationPhase
		}
		out[s.String()] = st
	}
	return out, nil
}

// 11. helm upgrade with a changed decode replica count.
func (d *demo) upgrade(ctx context.Context) error {
	d.header(fmt.Sprintf("helm upgrade: %s decode replicas -> %d", upgradeService, upgradeReplicas))
	target, before, err := d.decodeOf(ctx, upgradeService)
	if err != nil {
		return err
	}
	d.out.DecodeBefore = ptrDeref(before.Spec.Replicas)
	if _, err := d.command(ctx, d.helmEnv(), d.helm, d.chartArgs("upgrade", release, filepath.Join(d.cfg.Root, chart),
		"--namespace", systemNamespace, "-f", filepath.Join(d.cfg.Root, valuesFile),
		"--set", fmt.Sprintf("services.%s.spec.replicas=%d", upgradeService, upgradeReplicas))...); err != nil {
		return err
	}
	var after *appsv1.Deployment
	err = d.poll(ctx, "the decode Deployment scaled and the service Ready again", 300*time.Millisecond, func() (bool, error) {
		dep, err := d.decodeDeployment(ctx, target)
		if err != nil {
			return false, err
		}
		after = dep
		if ptrDeref(dep.Spec.Replicas) != upgradeReplicas || dep.Status.ObservedGeneration != dep.Generation || dep.Status.ReadyReplicas != upgradeReplicas {
			return false, nil
		}
		states, err := d.serviceStates(ctx)
		if err != nil {
			return false, err
		}
		return states[target.String()].Ready, nil
	})
	if after != nil {
		d.out.DecodeAfter, d.out.DecodeReady = ptrDeref(after.Spec.Replicas), after.Status.ReadyReplicas
	}
	if err != nil {
		return err
	}
	d.out.UpgradedReady = true
	d.say("Deployment %s/%s: replicas %d -> %d, generation %d -> %d, %d/%d pods ready; %s Ready again",
		after.Namespace, after.Name, d.out.DecodeBefore, d.out.DecodeAfter, before.Generation, after.Generation,
		after.Status.ReadyReplicas, d.out.DecodeAfter, target)
	return nil
}

func ptrDeref(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// decodeOf finds the demo's service name and its decode Deployment.
func (d *demo) decodeOf(ctx context.Context, name string) (serviceRef, *appsv1.Deployment, error) {
	i := slices.IndexFunc(d.services, func(s serviceRef) bool { return s.Name == name })
	if i < 0 {
		return serviceRef{}, nil, fmt.Errorf("%s has no service %s", valuesFile, name)
	}
	dep, err := d.decodeDeployment(ctx, d.services[i])
	return d.services[i], dep, err
}

// decodeDeployment finds a service's decode (main workload) Deployment by
// the engine's labels.
func (d *demo) decodeDeployment(ctx context.Context, s serviceRef) (*appsv1.Deployment, error) {
	list := &appsv1.DeploymentList{}
	if err := d.c.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels{
		partOf: "llminferenceservice", "app.kubernetes.io/name": s.Name, "app.kubernetes.io/component": "llminferenceservice-workload",
	}); err != nil {
		return nil, fmt.Errorf("list Deployments of %s: %w", s, err)
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("service %s has %d decode Deployments, want 1", s, len(list.Items))
	}
	return &list.Items[0], nil
}

// 17. Tear down, or keep the environment.
func (d *demo) finish(_ context.Context) error {
	if !d.cfg.Keep {
		d.header("Tear down: stop the data plane (test gateway, model servers, endpoint pickers), the API server, the controller, the LWS operator, kwok, kube-controller-manager, kube-scheduler, kube-apiserver and etcd")
		if err := d.tearDown(); err != nil {
			return err
		}
		d.say("demo done in %.1fs", d.elapsed().Seconds())
		return nil
	}
	d.header("Keep the environment running (DEMO_KEEP=1)")
	d.teardown = nil
	d.say("export KUBECONFIG=%s", d.kubeconfig)
	d.say("export PATH=%s:$PATH   # kubectl and helm", d.assets)
	d.say("kubectl get llminferenceservices,deployments,leaderworkersets,inferencepools.inference.networking.k8s.io,httproutes -n demo")
	d.say("kubectl get nodes,pods -A -o wide")
	if d.apiServer != nil {
		d.say("kubectl get models -A --as alice --as-group %s; kubectl get models -A --as bob", premiumGroup)
	}
	d.say("bin/odh-serving status -A")
	for _, st := range d.out.Services {
		if st.URL != "" {
			d.say("curl -s %s/v1/models   # through the test gateway to a model server at a pod's address (each service's URL alike)", st.URL)
			break
		}
	}
	d.say("helm list -A")
	d.say("logs: %s/{controller,api-server,dataplane,kube-apiserver,etcd}.log, %s/kwokcluster/{kube-scheduler,kube-controller-manager,kwok,lws-controller}.log, %s/*/epp.log", d.rel(d.cfg.Dir), d.rel(d.cfg.Dir), d.rel(d.pickersDir()))
	d.say("stop everything: go run ./test/demo down")
	d.say("demo done in %.1fs", d.elapsed().Seconds())
	return nil
}

// keptState records the demo's processes besides the cluster's: what down
// needs to stop a kept environment or the leftovers of a killed run.
type keptState struct {
	ControllerPID int `json:"controllerPid"`
	APIServerPID  int `json:"apiServerPid,omitempty"`
	DataPlanePID  int `json:"dataPlanePid"`
	// ClusterPIDs: kube-scheduler, kube-controller-manager, kwok and the
	// LWS operator.
	ClusterPIDs []int  `json:"clusterPids,omitempty"`
	Dir         string `json:"dir"`
}

// down stops what a DEMO_KEEP=1 run left: the simulated data plane, the
// controller, then the cluster. Nothing left is no error.
func down(dir string, out io.Writer) error {
	var errs []error
	path := filepath.Join(dir, stateFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		var st keptState
		if err := json.Unmarshal(data, &st); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, pid := range append([]int{st.DataPlanePID, st.APIServerPID, st.ControllerPID}, st.ClusterPIDs...) {
			errs = append(errs, detach.Stop(pid, st.Dir, 15*time.Second))
		}
		errs = append(errs, os.Remove(path))
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read %s: %w", path, err)
	}
	errs = append(errs, localcluster.Down(dir))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if out != nil {
		fmt.Fprintln(out, "demo environment stopped")
	}
	return nil
}
