package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
	"github.com/opendatahub-io/odh-serving/test/hostlock"
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
	// certDir is the API server's certificate directory of a Restartable
	// control plane; Stop removes it.
	certDir string
	// ports are etcd's, kube-apiserver's and the webhook server's,
	// claimed until Stop.
	ports Ports
	// validator is Options.Validator, which the webhook server serves.
	validator webhook.Validator
}

// NewScheme returns a scheme with every kind the tests use: the
// controller's (controller.NewScheme).
func NewScheme() (*runtime.Scheme, error) { return controller.NewScheme() }

// AllCRDs are the CRD sets Start installs.
var AllCRDs = []string{crds.Serving, crds.GIE, crds.GatewayAPI, crds.LWS, crds.CertManager, crds.KEDA}

// PlatformCRDs are CRD sets of platforms a cluster may or may not have,
// which Start leaves out: the controller renders more for a cluster that
// has them (Istio's DestinationRules, the Prometheus Operator's monitors),
// and a test installs them when it wants that (testenv.InstallCRDs).
//
// Kuadrant's policy CRDs (crds.Kuadrant) are not among them: with auth off
// the controller renders nothing for them, and at half a megabyte the
// AuthPolicy CRD would slow every test that installs these; the tests of
// auth install them themselves.
var PlatformCRDs = []string{crds.Istio, crds.PrometheusOperator}

// Options change what StartWith sets up.
type Options struct {
	// CRDs are the sets of api/crds to install (crds.Serving, crds.GIE, …).
	// Nil installs AllCRDs; leave a set out to test what happens while its
	// CRDs are missing, or to install them yourself.
	CRDs []string
	// Restartable keeps the API server's certificates in a directory of
	// the control plane's own, so StopAPIServer and StartAPIServer bring
	// it back on the same port with the same certificates: Config keeps
	// working. Remove a shared control plane's API server only in a test
	// that owns it.
	Restartable bool
	// APIServerFlags are extra kube-apiserver flags (name without the
	// dashes, value), such as the front proxy's --requestheader-* for an
	// aggregated API server.
	APIServerFlags map[string]string
	// Validator is what the validating webhook judges services with: the
	// controller's render options (allowed route hostnames, trigger
	// addresses). The zero value: the built-in presets, no hostname and
	// no trigger address allowed, as a controller with default flags.
	Validator webhook.Validator
}

// Start starts the control plane and the webhook server, installs the CRDs
// and the webhook configuration, and waits until the webhooks answer.
func Start() (*ControlPlane, error) { return StartWith(Options{}) }

// StartWith is Start with options.
func StartWith(o Options) (*ControlPlane, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, which builds kube-apiserver and etcd with hack/setup-test-assets.sh")
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	sets := o.CRDs
	if sets == nil {
		sets = AllCRDs
	}
	all, err := crds.Load(sets...)
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
	ports, err := ClaimPorts(env)
	if err != nil {
		return nil, err
	}
	// The webhook server, in this process, listens at a claimed port too.
	webhookPort, err := claim(1)
	if err != nil {
		return nil, errors.Join(err, ports.Release())
	}
	ports = append(ports, webhookPort...)
	env.WebhookInstallOptions.LocalServingHost, env.WebhookInstallOptions.LocalServingPort = localhost, webhookPort[0].Number
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", ServiceCIDR)
	for name, value := range o.APIServerFlags {
		env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	var certDir string
	if o.Restartable {
		// envtest makes new certificates on every start in a directory it
		// allocates; in a directory of ours it keeps the first ones.
		if certDir, err = os.MkdirTemp("", "odh-serving-apiserver-"); err != nil {
			return nil, errors.Join(fmt.Errorf("make the API server's certificate directory: %w", err), ports.Release())
		}
		env.ControlPlane.GetAPIServer().CertDir = certDir
		// With watches open, a graceful stop takes long; after this long
		// envtest kills the API server (and etcd), which is a fault as good.
		env.ControlPlaneStopTimeout = restartStopTimeout
	}
	var cfg *rest.Config
	err = withTestGOGC(func() (err error) {
		cfg, err = env.Start()
		return err
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start kube-apiserver and etcd (%s): %w", ports, err), removeDir(certDir), ports.Release())
	}
	cp := &ControlPlane{Config: cfg, Scheme: scheme, env: env, serverDone: make(chan error, 1), certDir: certDir, ports: ports, validator: o.Validator}
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
	// HTTP/1.1 only, as the controller's own webhook server
	// (controller.WebhookTLS): over HTTP/2 the kube-apiserver keeps its
	// connection open after the server's GOAWAY, and Stop waited the whole
	// second x/net/http2 gives a client to close it.
	server := ctrlwebhook.NewServer(ctrlwebhook.Options{
		Host:    opts.LocalServingHost,
		Port:    opts.LocalServingPort,
		CertDir: opts.LocalServingCertDir,
		TLSOpts: []func(*tls.Config){controller.WebhookTLS},
	})
	webhook.Register(server, cp.validator)
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

// AddUser provisions a user authenticated by a client certificate of the
// API server's client CA, with groups, and returns a config that reaches
// the API server as that user. Its rights are what RBAC gives the name
// and the groups.
func (cp *ControlPlane) AddUser(name string, groups ...string) (*rest.Config, error) {
	u, err := cp.env.AddUser(envtest.User{Name: name, Groups: groups}, cp.Config)
	if err != nil {
		return nil, fmt.Errorf("add user %s: %w", name, err)
	}
	return u.Config(), nil
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
	if cp.certDir != "" {
		// Tolerates the kill after restartStopTimeout.
		if err := cp.StopAPIServer(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := cp.env.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stop control plane: %w", err))
	}
	errs = append(errs, removeDir(cp.certDir), cp.ports.Release())
	cp.ports = nil
	return errors.Join(errs...)
}

// Ports are TCP ports claimed for a control plane's processes
// (hostlock.ClaimPort), on 127.0.0.1: etcd's client and peer ports,
// kube-apiserver's secure port and, for Start's, the webhook server's.
type Ports []*hostlock.Port

// ClaimPorts claims etcd's client and peer ports and kube-apiserver's
// secure port and sets them in env (its Etcd made if nil). envtest would
// ask the kernel for ports and close them again, remembering them only
// among envtest's own users, so that any process of the machine (a kwok
// cluster's scheduler, a test's server, a client's outgoing connection)
// could be handed one before etcd or kube-apiserver bound it, which then
// exited; and a stopped API server's port was anyone's until it started
// again. Claimed ports are never handed out by the kernel. Release them
// once the processes have stopped.
func ClaimPorts(env *envtest.Environment) (Ports, error) {
	ports, err := claim(3)
	if err != nil {
		return nil, err
	}
	if env.ControlPlane.Etcd == nil {
		env.ControlPlane.Etcd = &envtest.Etcd{}
	}
	env.ControlPlane.Etcd.URL = &url.URL{Scheme: "http", Host: ports.addr(0)}
	env.ControlPlane.Etcd.Configure().Set("listen-peer-urls", "http://"+ports.addr(1))
	api := env.ControlPlane.GetAPIServer()
	api.Address, api.Port = localhost, strconv.Itoa(ports[2].Number) // its SecureServing's
	return ports, nil
}

// claim claims n ports, all or none.
func claim(n int) (Ports, error) {
	var ports Ports
	for range n {
		p, err := hostlock.ClaimPort()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("control plane: %w", err), ports.Release())
		}
		ports = append(ports, p)
	}
	return ports, nil
}

const localhost = "127.0.0.1"

func (ports Ports) addr(i int) string {
	return net.JoinHostPort(localhost, strconv.Itoa(ports[i].Number))
}

// String names the ports, for an error of the processes'.
func (ports Ports) String() string {
	var what []string
	for i, name := range []string{"etcd", "etcd's peers", "kube-apiserver", "webhooks"}[:len(ports)] {
		what = append(what, name+" at "+ports.addr(i))
	}
	return strings.Join(what, ", ")
}

// Ports are the ports its processes listen at, claimed until Stop: etcd's
// client and peer ports, kube-apiserver's, the webhook server's.
func (cp *ControlPlane) Ports() Ports { return cp.ports }

// Release gives the ports up.
func (ports Ports) Release() error {
	var errs []error
	for _, p := range ports {
		errs = append(errs, p.Release())
	}
	return errors.Join(errs...)
}

// restartStopTimeout is how long a Restartable API server gets to stop
// gracefully before it is killed.
const restartStopTimeout = 3 * time.Second

// StopAPIServer stops kube-apiserver and leaves etcd running, for tests of
// what clients do while it is gone: SIGTERM, and SIGKILL if it has not
// stopped after 3 seconds (open watches hold a graceful stop for minutes).
// The control plane must be Restartable.
func (cp *ControlPlane) StopAPIServer() error {
	if cp.certDir == "" {
		return errors.New("stop the API server: the control plane was not started Restartable")
	}
	server := cp.env.ControlPlane.GetAPIServer()
	stopErr := server.Stop()
	if stopErr == nil {
		return nil
	}
	// Killed: done once its port is closed.
	address := net.JoinHostPort(server.Address, server.Port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", address, time.Second)
		if err != nil {
			return nil
		}
		_ = conn.Close()
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("stop the API server: %w; it still listens on %s", stopErr, address)
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same port, with the same certificates and the same etcd, and waits until
// it is healthy.
func (cp *ControlPlane) StartAPIServer() error {
	if cp.certDir == "" {
		return errors.New("start the API server: the control plane was not started Restartable")
	}
	if err := withTestGOGC(cp.env.ControlPlane.GetAPIServer().Start); err != nil {
		return fmt.Errorf("start the API server again: %w", err)
	}
	return nil
}

func removeDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the API server's certificate directory: %w", err)
	}
	return nil
}
