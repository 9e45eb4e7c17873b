package modelserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/opendatahub-io/odh-serving/test/podwatch"
)

// Defaults of Options.
const (
	DefaultResponseTime = 20 * time.Millisecond
	DefaultMaxRunning   = 4
)

// DefaultSelector picks the pods of LLMInferenceService workloads (main,
// prefill and workers), not their endpoint pickers'.
var DefaultSelector = labels.SelectorFromSet(labels.Set{"kserve.io/component": "workload"})

// SecretGetter reads a Secret, as the kubelet does for a pod's volume.
type SecretGetter func(ctx context.Context, namespace, name string) (*corev1.Secret, error)

// Options tune the simulator. The zero value means every default.
type Options struct {
	// Selector picks the pods to serve.
	Selector labels.Selector
	// Namespace, when set, is the only namespace whose pods are served:
	// the fleets of tests that share a cluster (testenv.Cluster) each serve
	// their own namespace's pods, which no two fleets may both listen for.
	Namespace string
	// ResponseTime is how long a completion takes once it runs.
	ResponseTime time.Duration
	// MaxRunning is how many completions a pod runs at once; the others
	// wait (vllm:num_requests_waiting).
	MaxRunning int
	// Log gets a line when a pod's server starts, stops or fails.
	Log io.Writer
}

func (o Options) withDefaults() Options {
	if o.Selector == nil {
		o.Selector = DefaultSelector
	}
	if o.ResponseTime == 0 {
		o.ResponseTime = DefaultResponseTime
	}
	if o.MaxRunning == 0 {
		o.MaxRunning = DefaultMaxRunning
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Fleet is the set of simulated model servers, one per Running pod.
type Fleet struct {
	opts    Options
	secrets SecretGetter

	mu   sync.Mutex
	pods map[string]*podServer // by namespace/name
	// failed remembers the last error of a pod that could not be served,
	// so a resync that fails the same way is not logged again.
	failed map[string]string
	logMu  sync.Mutex
}

// NewFleet returns a fleet that reads mounted Secrets with secrets.
func NewFleet(secrets SecretGetter, opts Options) *Fleet {
	return &Fleet{opts: opts.withDefaults(), secrets: secrets, pods: map[string]*podServer{}, failed: map[string]string{}}
}

func (f *Fleet) logf(format string, args ...any) {
	f.logMu.Lock()
	defer f.logMu.Unlock()
	fmt.Fprintf(f.opts.Log, "[model servers] "+format+"\n", args...)
}

// Apply serves a pod that is Running with an IP and selected, at its IP
// and ports, and stops serving one that is not (or serves it anew when its
// IP, model or ports changed). The error says why a pod that should be
// served is not.
func (f *Fleet) Apply(ctx context.Context, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil || !f.opts.Selector.Matches(labels.Set(pod.Labels)) {
		f.Remove(pod.Namespace, pod.Name)
		return nil
	}
	model, ports, err := readPod(pod)
	if err != nil {
		f.Remove(pod.Namespace, pod.Name)
		return f.fail(key, err)
	}
	version := fmt.Sprint(pod.Status.PodIP, model, ports)
	f.mu.Lock()
	old := f.pods[key]
	f.mu.Unlock()
	if old != nil && old.version == version {
		return nil
	}
	if old != nil {
		f.Remove(pod.Namespace, pod.Name)
	}
	s := &podServer{
		namespace: pod.Namespace, name: pod.Name, ip: pod.Status.PodIP, model: model, ports: ports,
		opts: f.opts, load: newLoad(f.opts.MaxRunning), version: version,
	}
	if err := s.start(func(p Port) (*tls.Certificate, error) { return f.certificate(ctx, pod, p) }); err != nil {
		return f.fail(key, err)
	}
	f.mu.Lock()
	f.pods[key] = s
	delete(f.failed, key)
	f.mu.Unlock()
	var where []string
	for _, p := range ports {
		scheme := "http"
		if p.TLS() {
			scheme = "https"
		}
		where = append(where, fmt.Sprintf("%s://%s:%d", scheme, s.ip, p.Number))
	}
	f.logf("pod %s serves %s at %s", key, strings.Join(append(slices.Clone(model.Names), model.Adapters...), ", "), strings.Join(where, " "))
	return nil
}

func (f *Fleet) fail(key string, err error) error {
	f.mu.Lock()
	again := f.failed[key] == err.Error()
	f.failed[key] = err.Error()
	f.mu.Unlock()
	if !again {
		f.logf("%v", err)
	}
	return err
}

// Remove stops serving a pod.
func (f *Fleet) Remove(namespace, name string) {
	key := namespace + "/" + name
	f.mu.Lock()
	s := f.pods[key]
	delete(f.pods, key)
	delete(f.failed, key)
	f.mu.Unlock()
	if s != nil {
		s.stop()
		f.logf("pod %s stopped serving", key)
	}
}

// Stats is the load of a served pod; false when it is not served.
func (f *Fleet) Stats(namespace, name string) (Stats, bool) {
	f.mu.Lock()
	s := f.pods[namespace+"/"+name]
	f.mu.Unlock()
	if s == nil {
		return Stats{}, false
	}
	return s.load.stats(), true
}

// Served lists the served pods as namespace/name, sorted.
func (f *Fleet) Served() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.pods))
	for k := range f.pods {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Close stops serving every pod.
func (f *Fleet) Close() {
	for _, key := range f.Served() {
		ns, name, _ := strings.Cut(key, "/")
		f.Remove(ns, name)
	}
}

// certificate reads the certificate and key that the port's container
// reads from its files: the Secret volume mounted where they are.
func (f *Fleet) certificate(ctx context.Context, pod *corev1.Pod, p Port) (*tls.Certificate, error) {
	all := append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
	i := slices.IndexFunc(all, func(c corev1.Container) bool { return c.Name == p.Container })
	if i < 0 {
		return nil, fmt.Errorf("no container %s", p.Container)
	}
	c := all[i]
	read := func(file string) ([]byte, error) {
		for _, m := range c.VolumeMounts {
			rel, ok := strings.CutPrefix(path.Clean(file), path.Clean(m.MountPath)+"/")
			if !ok {
				continue
			}
			vi := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
			if vi < 0 || pod.Spec.Volumes[vi].Secret == nil {
				return nil, fmt.Errorf("%s: the volume %s mounted at %s is not a Secret", file, m.Name, m.MountPath)
			}
			src := pod.Spec.Volumes[vi].Secret
			key := rel
			for _, item := range src.Items {
				if item.Path == rel {
					key = item.Key
				}
			}
			secret, err := f.secrets(ctx, pod.Namespace, src.SecretName)
			if err != nil {
				return nil, fmt.Errorf("%s: read Secret %s/%s: %w", file, pod.Namespace, src.SecretName, err)
			}
			data, ok := secret.Data[key]
			if !ok {
				return nil, fmt.Errorf("%s: Secret %s/%s has no key %s", file, pod.Namespace, src.SecretName, key)
			}
			return data, nil
		}
		return nil, fmt.Errorf("%s: %w: no volume is mounted there in container %s", file, errNoCertificate, c.Name)
	}
	certPEM, err := read(p.CertFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := read(p.KeyFile)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", p.CertFile, p.KeyFile, err)
	}
	return &cert, nil
}

// Run serves the selected pods of the cluster until ctx ends: an informer
// on pods, resynced every few seconds so a pod whose Secret was missing is
// served once it exists.
func (f *Fleet) Run(ctx context.Context, cs kubernetes.Interface) error {
	if f.opts.Namespace == "" {
		f.logf("following pods %q", f.opts.Selector)
	} else {
		f.logf("following pods %q in namespace %s", f.opts.Selector, f.opts.Namespace)
	}
	err := podwatch.Follow(ctx, cs, f.opts.Namespace, f.opts.Selector, 5*time.Second,
		func(pod *corev1.Pod) { _ = f.Apply(ctx, pod) }, // logged by Apply
		func(pod *corev1.Pod) { f.Remove(pod.Namespace, pod.Name) })
	if err != nil {
		return fmt.Errorf("model servers: %w", err)
	}
	f.Close()
	return nil
}

// ClientSecrets reads Secrets from the API server.
func ClientSecrets(cs kubernetes.Interface) SecretGetter {
	return func(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
		s, err := cs.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("not found (yet): %w", err)
		}
		return s, err
	}
}
