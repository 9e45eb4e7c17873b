package endpointpicker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/opendatahub-io/odh-serving/test/podwatch"

	"github.com/opendatahub-io/odh-serving/test/localcluster"
)

// PodSelector picks the endpoint picker pods of LLMInferenceServices.
var PodSelector = labels.SelectorFromSet(labels.Set{"app.kubernetes.io/component": "llminferenceservice-router-scheduler"})

// Runner plays the kubelet for endpoint picker pods whose nodes run no
// container (kwok's): for each Running one it runs GIE's endpoint picker as
// a local process (Start) with the pod's container arguments, changed
// only where one machine needs it (Adapt's configuration, listen ports
// claimed for it, the certificate folder), as the pod's ServiceAccount (a
// TokenRequest token, so the rendered RBAC is all it may do), with the
// certificate of the Secret the pod mounts at its --cert-path. A pod whose
// configuration GIE's endpoint picker cannot run gets no process:
// EndpointPicker then fails, and the pool's failureMode decides; so it
// does until the process listens at its gRPC port.
type Runner struct {
	binary, dir string
	cfg         *rest.Config
	cs          kubernetes.Interface
	log         io.Writer

	mu    sync.Mutex
	procs map[string]*eppProcess // by namespace/pod
	logMu sync.Mutex
}

// eppProcess is one pod's endpoint picker.
type eppProcess struct {
	namespace, pod string
	labels         labels.Set
	uid            string
	// proc is the process; nil when none runs, and unrunnable says why.
	proc       *Process
	useTLS     bool
	unrunnable string
	// serving is closed once proc listens at its gRPC port (Serving).
	serving chan struct{}
}

// QuietPoolMetrics is appended to every endpoint picker's flags. GIE
// v1.3.1's datastore takes its read lock twice in PoolGet, which the
// pool-metrics refresher calls every 5 s by default: when an InferencePool
// update (PoolSet, a writer) arrives between the two, the endpoint picker
// deadlocks and stops following pods (fixed upstream after v1.3.1, GIE pull
// request 2571). Nothing here reads the inference_pool_* metrics that
// refresher publishes, so it runs once an hour.
var QuietPoolMetrics = []string{"--refresh-prometheus-metrics-interval", "1h"}

// NewRunner returns a runner of the endpoint picker binary for the cluster
// of cfg (whose user may create tokens of any ServiceAccount), keeping each
// pod's log, certificate and kubeconfig under dir.
func NewRunner(cfg *rest.Config, binary, dir string, log io.Writer) (*Runner, error) {
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("endpoint picker runner: %w (build it with `bash hack/setup-test-assets.sh epp`)", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("endpoint picker runner: %w", err)
	}
	if log == nil {
		log = io.Discard
	}
	return &Runner{binary: binary, dir: dir, cfg: cfg, cs: cs, log: log, procs: map[string]*eppProcess{}}, nil
}

func (r *Runner) logf(format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.log, "[endpoint pickers] "+format+"\n", args...)
}

// Run follows the endpoint picker pods until ctx ends, then stops every
// process.
func (r *Runner) Run(ctx context.Context) error {
	err := podwatch.Follow(ctx, r.cs, "", PodSelector, 5*time.Second,
		func(pod *corev1.Pod) { r.apply(ctx, pod) },
		func(pod *corev1.Pod) { r.stop(pod.Namespace + "/" + pod.Name) })
	if err != nil {
		return fmt.Errorf("endpoint picker runner: %w", err)
	}
	r.mu.Lock()
	keys := make([]string, 0, len(r.procs))
	for k := range r.procs {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	for _, k := range keys {
		r.stop(k)
	}
	return nil
}

// apply starts the pod's endpoint picker once it is Running, and stops it
// when the pod is deleted or replaced.
func (r *Runner) apply(ctx context.Context, pod *corev1.Pod) {
	key := pod.Namespace + "/" + pod.Name
	r.mu.Lock()
	p := r.procs[key]
	r.mu.Unlock()
	running := pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil
	if p != nil && (!running || p.uid != string(pod.UID)) {
		r.stop(key)
		p = nil
	}
	if p != nil || !running {
		return
	}
	p, err := r.start(ctx, pod)
	if err != nil {
		r.logf("pod %s: %v", key, err)
		return
	}
	r.mu.Lock()
	r.procs[key] = p
	r.mu.Unlock()
}

func (r *Runner) stop(key string) {
	r.mu.Lock()
	p := r.procs[key]
	delete(r.procs, key)
	r.mu.Unlock()
	if p == nil || p.proc == nil {
		return
	}
	p.proc.Stop()
	r.logf("pod %s: endpoint picker stopped", key)
}

// start runs the endpoint picker of a Running pod.
func (r *Runner) start(ctx context.Context, pod *corev1.Pod) (*eppProcess, error) {
	key := pod.Namespace + "/" + pod.Name
	p := &eppProcess{namespace: pod.Namespace, pod: pod.Name, labels: labels.Set(pod.Labels), uid: string(pod.UID), serving: make(chan struct{})}
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return slices.Contains(c.Args, "--pool-name") })
	if i < 0 {
		return nil, errors.New("no container runs an endpoint picker (no --pool-name argument)")
	}
	c := pod.Spec.Containers[i]
	dir := filepath.Join(r.dir, pod.Namespace+"_"+pod.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("endpoint picker: %w", err)
	}
	args := slices.Clone(c.Args)
	p.useTLS = true
	for j := 0; j < len(args); j++ {
		switch {
		case args[j] == "--secure-serving=false":
			p.useTLS = false
		case j+1 < len(args) && args[j] == "--cert-path":
			certs := filepath.Join(dir, "certs")
			if err := r.writeMounted(ctx, pod, c, args[j+1], certs); err != nil {
				return nil, fmt.Errorf("endpoint picker: --cert-path %s: %w", args[j+1], err)
			}
			args[j+1] = certs
		case j+1 < len(args) && args[j] == "--config-text":
			adapted, err := Adapt(args[j+1])
			if err != nil {
				return nil, fmt.Errorf("endpoint picker: --config-text: %w", err)
			}
			if !adapted.Runnable() {
				p.unrunnable = "GIE's endpoint picker cannot run its profile: " + strings.Join(adapted.Unrunnable, "; ")
				r.logf("pod %s: no endpoint picker started: %s", key, p.unrunnable)
				return p, nil
			}
			args[j+1] = adapted.Config
		case j+1 < len(args) && args[j] == "--config-file":
			return nil, errors.New("endpoint picker: --config-file is not supported by the runner (only --config-text)")
		}
	}
	kubeconfig, err := r.kubeconfig(ctx, pod, dir)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "epp.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("endpoint picker: %w", err)
	}
	if p.proc, err = Start(r.binary, args, kubeconfig, logFile); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		// The gateway is given its address once it listens there itself.
		if err := p.proc.Serving(ctx); err != nil {
			r.logf("pod %s: %v; its log: %s", key, err, logPath)
		} else {
			close(p.serving)
		}
		<-p.proc.Done()
		logFile.Close()
		r.mu.Lock()
		current := r.procs[key] == p
		r.mu.Unlock()
		if current {
			r.logf("pod %s: endpoint picker exited: %v; its log: %s", key, p.proc.Err(), logPath)
		}
	}()
	r.logf("pod %s: endpoint picker pid %d serves ext_proc at %s (TLS %t) as ServiceAccount %s, log %s", key, p.proc.Pid(), p.proc.Addr, p.useTLS, pod.Spec.ServiceAccountName, logPath)
	return p, nil
}

// kubeconfig writes a kubeconfig with a token of the pod's ServiceAccount.
func (r *Runner) kubeconfig(ctx context.Context, pod *corev1.Pod, dir string) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tok, err := r.cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(24 * 3600))}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("endpoint picker: a token of ServiceAccount %s/%s: %w", pod.Namespace, sa, err)
	}
	ca := r.cfg.CAData
	if len(ca) == 0 && r.cfg.CAFile != "" {
		if ca, err = os.ReadFile(r.cfg.CAFile); err != nil {
			return "", fmt.Errorf("endpoint picker: the API server's CA: %w", err)
		}
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(path, &rest.Config{Host: r.cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, BearerToken: tok.Status.Token}); err != nil {
		return "", fmt.Errorf("endpoint picker: %w", err)
	}
	return path, nil
}

// writeMounted copies into folder the keys of the Secret container c mounts
// at mountPath, as the kubelet would project them.
func (r *Runner) writeMounted(ctx context.Context, pod *corev1.Pod, c corev1.Container, mountPath, folder string) error {
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return path.Clean(m.MountPath) == path.Clean(mountPath) })
	if i < 0 {
		return fmt.Errorf("no volume is mounted there in container %s", c.Name)
	}
	vi := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	if vi < 0 || pod.Spec.Volumes[vi].Secret == nil {
		return fmt.Errorf("the volume %s is not a Secret", c.VolumeMounts[i].Name)
	}
	name := pod.Spec.Volumes[vi].Secret.SecretName
	secret, err := r.cs.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read Secret %s/%s: %w", pod.Namespace, name, err)
	}
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return err
	}
	for k, v := range secret.Data {
		if err := os.WriteFile(filepath.Join(folder, k), v, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// EndpointPicker says where the endpoint picker behind a Service port
// listens: the process of a Running pod the Service selects, for the test
// gateway (gateway.Options.EndpointPicker). The port is the Service's; the
// process listens where the runner put it.
func (r *Runner) EndpointPicker(ctx context.Context, namespace, service string, _ int32) (string, bool, error) {
	svc, err := r.cs.CoreV1().Services(namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return "", false, fmt.Errorf("endpoint picker Service %s/%s: %w", namespace, service, err)
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	r.mu.Lock()
	defer r.mu.Unlock()
	var why []string
	keys := make([]string, 0, len(r.procs))
	for k := range r.procs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := r.procs[k]
		if p.namespace != namespace || !sel.Matches(p.labels) {
			continue
		}
		if p.proc == nil {
			why = append(why, fmt.Sprintf("pod %s: %s", p.pod, p.unrunnable))
			continue
		}
		select {
		case <-p.serving:
			return p.proc.Addr, p.useTLS, nil
		default:
			why = append(why, fmt.Sprintf("pod %s: its endpoint picker does not listen at %s (yet)", p.pod, p.proc.Addr))
		}
	}
	if len(why) == 0 {
		return "", false, fmt.Errorf("endpoint picker Service %s/%s: no Running pod", namespace, service)
	}
	return "", false, fmt.Errorf("endpoint picker Service %s/%s: no endpoint picker runs (%s)", namespace, service, strings.Join(why, "; "))
}

func ptrTo[T any](v T) *T { return &v }
