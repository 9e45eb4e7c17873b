package kwokcluster

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/test/localcluster"
)

// LWSBinary is the LeaderWorkerSet operator's manager (sigs.k8s.io/lws
// cmd/main.go) as hack/setup-test-assets.sh builds it.
const LWSBinary = "lws-controller"

// LWSWebhookConfigurations are the names of the operator's mutating and
// validating webhook configurations.
var LWSWebhookConfigurations = []string{"lws-mutating-webhook-configuration", "lws-validating-webhook-configuration"}

// lwsWebhookHost is where the operator's webhook server listens and where
// the API server calls it: a webhook URL, unlike a Service's endpoints,
// may be loopback.
const lwsWebhookHost = "127.0.0.1"

//go:embed lws/webhooks-v0.8.0.yaml
var lwsWebhooksYAML string

// LWS is the LeaderWorkerSet operator ready to run: its process, and what
// the API server needs to call its webhooks.
type LWS struct {
	Process Process
	// Port is its webhook server's port on 127.0.0.1.
	Port int
	// CABundle is the PEM CA that signed its serving certificate.
	CABundle []byte
}

// PrepareLWS writes into dir what the operator runs with: a kubeconfig for
// cfg's user (which must be allowed everything), a serving certificate for
// 127.0.0.1 signed by a new CA (the operator's own certificate rotation
// needs its Service and Secret in a cluster, so it is off), and its
// configuration: webhook server on 127.0.0.1:port, no leader election, no
// metrics or health server. It returns the process to run.
func PrepareLWS(cfg *rest.Config, assetsDir, dir string, port int) (*LWS, error) {
	bin := filepath.Join(assetsDir, LWSBinary)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("LWS operator: %s missing from %s (run `bash hack/setup-test-assets.sh cluster`): %w", LWSBinary, assetsDir, err)
	}
	certDir := filepath.Join(dir, "lws-webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("LWS operator: create %s: %w", certDir, err)
	}
	now := time.Now()
	ca, err := certs.NewCA("odh-serving-kwokcluster-lws-webhook-ca", now, certs.DefaultCALifetime)
	if err != nil {
		return nil, fmt.Errorf("LWS operator: %w", err)
	}
	serving, err := certs.Issue(ca, []string{lwsWebhookHost}, now, certs.DefaultLeafLifetime)
	if err != nil {
		return nil, fmt.Errorf("LWS operator: %w", err)
	}
	config := fmt.Sprintf(`apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: %s
  port: %d
  certDir: %s
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: "0"
`, lwsWebhookHost, port, certDir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	files := map[string][]byte{
		filepath.Join(certDir, "tls.crt"):     serving.CertPEM,
		filepath.Join(certDir, "tls.key"):     serving.KeyPEM,
		filepath.Join(dir, "lws-config.yaml"): []byte(config),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("LWS operator: write %s: %w", path, err)
		}
	}
	if err := localcluster.WriteKubeconfig(kubeconfig, cfg); err != nil {
		return nil, fmt.Errorf("LWS operator: %w", err)
	}
	return &LWS{
		Process: Process{Name: "lws-controller", Log: filepath.Join(dir, "lws-controller.log"), Args: []string{
			bin, "--kubeconfig", kubeconfig, "--config", filepath.Join(dir, "lws-config.yaml"), "--zap-log-level=info",
		}},
		Port:     port,
		CABundle: ca.CertPEM,
	}, nil
}

// WebhookConfigurations returns the operator's webhook configurations
// (upstream's, lws/webhooks-v0.8.0.yaml) calling its server on
// 127.0.0.1:Port with its CA.
func (l *LWS) WebhookConfigurations() ([]client.Object, error) {
	var objs []client.Object
	for i, doc := range strings.Split(lwsWebhooksYAML, "\n---\n") {
		head := &metav1.TypeMeta{}
		if err := yaml.Unmarshal([]byte(doc), head); err != nil {
			return nil, fmt.Errorf("LWS webhooks, document %d: %w", i+1, err)
		}
		var configs []*admissionv1.WebhookClientConfig
		var obj client.Object
		switch head.Kind {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict([]byte(doc), m); err != nil {
				return nil, fmt.Errorf("LWS webhooks, document %d: %w", i+1, err)
			}
			for j := range m.Webhooks {
				configs = append(configs, &m.Webhooks[j].ClientConfig)
			}
			obj = m
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
				return nil, fmt.Errorf("LWS webhooks, document %d: %w", i+1, err)
			}
			for j := range v.Webhooks {
				configs = append(configs, &v.Webhooks[j].ClientConfig)
			}
			obj = v
		default:
			return nil, fmt.Errorf("LWS webhooks, document %d: unexpected kind %q", i+1, head.Kind)
		}
		obj.SetName("lws-" + obj.GetName())
		for _, cc := range configs {
			if cc.Service == nil || cc.Service.Path == nil {
				return nil, fmt.Errorf("LWS webhooks: %s has a webhook with no service path", obj.GetName())
			}
			url := "https://" + lwsWebhookHost + ":" + strconv.Itoa(l.Port) + *cc.Service.Path
			*cc = admissionv1.WebhookClientConfig{URL: &url, CABundle: l.CABundle}
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// InstallWebhooks applies the operator's webhook configurations
// (failurePolicy Fail, as upstream's): from then on, LeaderWorkerSets and
// their pods are created only while the operator answers.
func (l *LWS) InstallWebhooks(ctx context.Context, c client.Client) error {
	objs, err := l.WebhookConfigurations()
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("odh-serving-kwokcluster"), client.ForceOwnership); err != nil {
			return fmt.Errorf("LWS operator: apply %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	return nil
}

// UninstallLWSWebhooks deletes the operator's webhook configurations, so
// that a cluster whose operator stopped still takes pods.
func UninstallLWSWebhooks(ctx context.Context, c client.Client) error {
	var errs []error
	for i, name := range LWSWebhookConfigurations {
		var obj client.Object = &admissionv1.MutatingWebhookConfiguration{}
		if i == 1 {
			obj = &admissionv1.ValidatingWebhookConfiguration{}
		}
		obj.SetName(name)
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("LWS operator: delete %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// WaitLWS polls, until ctx ends, until the API server reaches both of the
// operator's webhooks: a server-side dry-run create of a LeaderWorkerSet
// comes back defaulted by it (spec.networkConfig), and one of a
// LeaderWorkerSet's leader pod comes back with the group labels it adds.
// c's scheme must know LeaderWorkerSets. alive, if not nil, is asked each
// round and ends the wait with its error (the operator exited).
func WaitLWS(ctx context.Context, c client.Client, alive func() error) error {
	last := errors.New("not checked yet")
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if alive != nil {
			if err := alive(); err != nil {
				return false, err
			}
		}
		last = probeLWSWebhooks(ctx, c)
		return last == nil, nil
	})
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("LWS operator: its webhooks do not answer in time: %w", last)
	}
	return nil
}

const probeName = "kwokcluster-lws-probe"

func probeLWSWebhooks(ctx context.Context, c client.Client) error {
	template := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "kwok.invalid/probe:v1"}}}}
	l := &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: probeName},
		Spec: lwsv1.LeaderWorkerSetSpec{
			StartupPolicy:        lwsv1.LeaderCreatedStartupPolicy,
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{Size: ptr.To[int32](2), WorkerTemplate: template},
		},
	}
	if err := c.Create(ctx, l, client.DryRunAll); err != nil {
		return fmt.Errorf("dry-run create of LeaderWorkerSet %s/%s: %w", l.Namespace, l.Name, err)
	}
	if l.Spec.NetworkConfig == nil || l.Spec.NetworkConfig.SubdomainPolicy == nil {
		return fmt.Errorf("dry-run create of LeaderWorkerSet %s/%s: not defaulted by the operator's webhook (no spec.networkConfig.subdomainPolicy)", l.Namespace, l.Name)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceDefault, Name: probeName + "-0",
			Labels:      map[string]string{lwsv1.SetNameLabelKey: probeName, lwsv1.WorkerIndexLabelKey: "0"},
			Annotations: map[string]string{lwsv1.SizeAnnotationKey: "2"},
		},
		Spec: template.Spec,
	}
	if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
		return fmt.Errorf("dry-run create of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if pod.Labels[lwsv1.GroupIndexLabelKey] != "0" || pod.Labels[lwsv1.GroupUniqueHashLabelKey] == "" {
		return fmt.Errorf("dry-run create of pod %s/%s: not labelled by the operator's webhook (labels %v)", pod.Namespace, pod.Name, pod.Labels)
	}
	return nil
}
