package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/api"
	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
)

// ServiceCIDR is wider than envtest's default /24, which runs out at about
// 127 Services and would cap scale tests.
const ServiceCIDR = "10.96.0.0/12"

// ControlPlane is a running kube-apiserver and etcd with odh-serving's CRDs
// and webhooks.
type ControlPlane struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is a client with Scheme.
	Client client.Client
	// Scheme knows the core kinds, both serving.kserve.io versions, GIE,
	// Gateway API and LWS.
	Scheme *runtime.Scheme

	env        *envtest.Environment
	stopServer context.CancelFunc
	serverDone chan error
}

// NewScheme returns a scheme with every kind the tests use.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, api.AddToScheme,
		gieapiv1.Install, gieapixv1alpha2.Install, gatewayv1.Install, lwsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return s, nil
}

// Start starts the control plane and the webhook server, installs the CRDs
// and the webhook configuration, and waits until the webhooks answer.
func Start() (*ControlPlane, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, which builds kube-apiserver and etcd with hack/setup-test-assets.sh")
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	all, err := crds.Load(crds.Serving, crds.GIE, crds.GatewayAPI, crds.LWS, crds.CertManager)
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDInstallOptions: envtest.CRDInstallOptions{CRDs: all, Scheme: scheme},
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			ValidatingWebhooks: []*admissionv1.ValidatingWebhookConfiguration{webhook.ValidatingConfiguration("odh-serving", "odh-serving-webhook", nil)},
		},
		ErrorIfCRDPathMissing: true,
	}
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", ServiceCIDR)
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver and etcd: %w", err)
	}
	cp := &ControlPlane{Config: cfg, Scheme: scheme, env: env, serverDone: make(chan error, 1)}
	if err := cp.startWebhooks(); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	cp.Client, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("create client: %w", err), cp.Stop())
	}
	return cp, nil
}

func (cp *ControlPlane) startWebhooks() error {
	opts := cp.env.WebhookInstallOptions
	server := ctrlwebhook.NewServer(ctrlwebhook.Options{
		Host:    opts.LocalServingHost,
		Port:    opts.LocalServingPort,
		CertDir: opts.LocalServingCertDir,
	})
	webhook.Register(server)
	ctx, cancel := context.WithCancel(context.Background())
	cp.stopServer = cancel
	go func() { cp.serverDone <- server.Start(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := server.StartedChecker()(nil)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server on %s:%d did not start: %w", opts.LocalServingHost, opts.LocalServingPort, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the webhook server, the API server and etcd.
func (cp *ControlPlane) Stop() error {
	var errs []error
	if cp.stopServer != nil {
		cp.stopServer()
		if err := <-cp.serverDone; err != nil {
			errs = append(errs, fmt.Errorf("webhook server: %w", err))
		}
	}
	if err := cp.env.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stop control plane: %w", err))
	}
	return errors.Join(errs...)
}
