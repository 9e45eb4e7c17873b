package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/opendatahub-io/odh-serving/test/controlplane"
)

// Files in the cluster's folder.
const (
	KubeconfigFile = "kubeconfig"
	StateFile      = "cluster.json"
	etcdDir        = "etcd"
	pkiDir         = "pki"
	etcdLog        = "etcd.log"
	apiServerLog   = "kube-apiserver.log"
	// SupervisorLog is where Up sends the supervisor's output.
	SupervisorLog = "cluster.log"
	contextName   = "odh-serving-local"
)

// Options say where the cluster lives and which binaries run it.
type Options struct {
	// Dir holds the kubeconfig, the state file, logs, etcd's data and the
	// API server's certificates. Required.
	Dir string
	// AssetsDir holds the etcd and kube-apiserver binaries (the folder
	// hack/setup-test-assets.sh prints). Empty means $KUBEBUILDER_ASSETS.
	AssetsDir string
	// ServiceCIDR defaults to controlplane.ServiceCIDR.
	ServiceCIDR string
	// StartTimeout bounds the start of etcd and of the API server; default
	// one minute (a loaded 2-core machine needs more than envtest's 20 s).
	StartTimeout time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("local cluster: no folder given")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return o, fmt.Errorf("local cluster folder %s: %w", o.Dir, err)
	}
	o.Dir = dir
	if o.AssetsDir == "" {
		o.AssetsDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if o.AssetsDir == "" {
		return o, errors.New("local cluster: no etcd and kube-apiserver: set KUBEBUILDER_ASSETS to the folder `bash hack/setup-test-assets.sh` prints")
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(o.AssetsDir, bin)); err != nil {
			return o, fmt.Errorf("local cluster: %s missing from %s (run `bash hack/setup-test-assets.sh`): %w", bin, o.AssetsDir, err)
		}
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = controlplane.ServiceCIDR
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = time.Minute
	}
	return o, nil
}

// Cluster is a control plane running inside this process.
type Cluster struct {
	// Config reaches the API server as a member of system:masters.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the same identity.
	Kubeconfig string
	// Dir is the cluster's folder.
	Dir string

	env   *envtest.Environment
	files []*os.File
	// ports are etcd's and kube-apiserver's, claimed until Stop
	// (controlplane.ClaimPorts).
	ports controlplane.Ports
}

// Start starts etcd and kube-apiserver on loopback with an empty etcd, and
// writes the kubeconfig into opts.Dir. No CRDs are installed.
func Start(opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	for _, d := range []string{etcdDir, pkiDir} {
		if err := os.RemoveAll(filepath.Join(opts.Dir, d)); err != nil {
			return nil, fmt.Errorf("local cluster: clear %s: %w", d, err)
		}
		if err := os.MkdirAll(filepath.Join(opts.Dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("local cluster: create %s: %w", d, err)
		}
	}
	c := &Cluster{Dir: opts.Dir, Kubeconfig: filepath.Join(opts.Dir, KubeconfigFile)}
	// The logs must be files, not pipes: envtest's processes outlive this
	// one when Up's supervisor is killed, and a pipe would end them with
	// SIGPIPE.
	etcdOut, err := c.createLog(etcdLog)
	if err != nil {
		return nil, err
	}
	apiOut, err := c.createLog(apiServerLog)
	if err != nil {
		return nil, errors.Join(err, c.closeLogs())
	}
	apiServer := &envtest.APIServer{CertDir: filepath.Join(opts.Dir, pkiDir), Out: apiOut, Err: apiOut}
	// The front proxy of aggregated API servers (the MaaS API server). Its
	// aggregator routing is also what lets webhooks and conversion reach
	// their Services through EndpointSlices that point at this machine:
	// there is no kube-proxy.
	proxy, _, err := controlplane.FrontProxy(filepath.Join(opts.Dir, pkiDir))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("local cluster: %w", err), c.closeLogs())
	}
	apiServer.Configure().
		Set("service-cluster-ip-range", opts.ServiceCIDR).
		Set("enable-aggregator-routing", "true")
	for name, value := range proxy {
		apiServer.Configure().Set(name, value)
	}
	c.env = &envtest.Environment{
		BinaryAssetsDirectory: opts.AssetsDir,
		ControlPlane: envtest.ControlPlane{
			Etcd:      &envtest.Etcd{DataDir: filepath.Join(opts.Dir, etcdDir), Out: etcdOut, Err: etcdOut},
			APIServer: apiServer,
		},
		ControlPlaneStartTimeout: opts.StartTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	if c.ports, err = controlplane.ClaimPorts(c.env); err != nil {
		return nil, errors.Join(fmt.Errorf("local cluster: %w", err), c.closeLogs())
	}
	if _, err := c.env.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("local cluster: start etcd and kube-apiserver (%s; logs in %s): %w", c.ports, opts.Dir, err), c.closeLogs(), c.ports.Release())
	}
	admin, err := c.env.AddUser(envtest.User{Name: "odh-serving-local-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("local cluster: create the admin user: %w", err), c.Stop())
	}
	c.Config = admin.Config()
	if err := WriteKubeconfig(c.Kubeconfig, c.Config); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

func (c *Cluster) createLog(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(c.Dir, name))
	if err != nil {
		return nil, fmt.Errorf("local cluster: create %s: %w", name, err)
	}
	c.files = append(c.files, f)
	return f, nil
}

func (c *Cluster) closeLogs() error {
	var errs []error
	for _, f := range c.files {
		errs = append(errs, f.Close())
	}
	c.files = nil
	return errors.Join(errs...)
}

// APIServerURL is the API server's address.
func (c *Cluster) APIServerURL() string { return c.Config.Host }

// EtcdURL is etcd's client address.
func (c *Cluster) EtcdURL() string { return c.env.ControlPlane.Etcd.URL.String() }

// Stop stops the API server and etcd, and removes the etcd data, the
// certificates and the kubeconfig (which would name a dead server).
func (c *Cluster) Stop() error {
	errs := []error{c.env.Stop(), c.closeLogs(), c.ports.Release()}
	for _, p := range []string{etcdDir, pkiDir, KubeconfigFile} {
		errs = append(errs, os.RemoveAll(filepath.Join(c.Dir, p)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("local cluster: stop: %w", err)
	}
	return nil
}

// WriteKubeconfig writes a kubeconfig with one context, odh-serving-local,
// that reaches cfg's API server as cfg's user (client certificate or
// bearer token), for processes that take a --kubeconfig.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[contextName] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	kc.CurrentContext = contextName
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("local cluster: write kubeconfig %s: %w", path, err)
	}
	return nil
}
