package apiserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// Defaults of the flags, and the fixed bounds of a token's lifetime.
const (
	DefaultSecurePort         = 8443
	DefaultTokenAudience      = "maas-default-gateway-sa"
	DefaultTokenMaxExpiration = 30 * 24 * time.Hour
	// MinTokenExpiration is the shortest token a TokenRequest may ask
	// for; it is also the Kubernetes TokenRequest API's minimum.
	MinTokenExpiration = 10 * time.Minute
	// DefaultTokenExpiration is a token's lifetime when the TokenRequest
	// names none.
	DefaultTokenExpiration = 4 * time.Hour
)

// inClusterNamespaceFile is where a pod finds its own namespace.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Options are the api-server's flags.
type Options struct {
	// SecureServing, Authentication and Authorization are k8s.io/apiserver's
	// own options: --secure-port, --tls-cert-file, --client-ca-file,
	// --requestheader-*, --authentication-kubeconfig, ...
	SecureServing  *genericoptions.SecureServingOptionsWithLoopback
	Authentication *genericoptions.DelegatingAuthenticationOptions
	Authorization  *genericoptions.DelegatingAuthorizationOptions

	// Kubeconfig reaches the cluster for the informers and for minting
	// tokens; empty means in-cluster or $KUBECONFIG. It is also the
	// default of --authentication-kubeconfig and --authorization-kubeconfig.
	Kubeconfig string
	// Tiers are --tier-config-namespace (default: the pod's namespace),
	// --tier-config-name and --tier-namespace-prefix, the controller's
	// flags too: where the tier ConfigMap is, and the tier namespaces,
	// where the ServiceAccounts of the tiers' users live.
	Tiers tier.Source
	// TokenAudience is the audience of minted tokens.
	TokenAudience string
	// TokenMaxExpiration is the longest lifetime a TokenRequest may ask for.
	TokenMaxExpiration time.Duration
}

// NewOptions returns the options with their defaults.
func NewOptions() *Options {
	serving := genericoptions.NewSecureServingOptions()
	serving.BindPort = DefaultSecurePort
	// No --cert-dir by default: without --tls-cert-file the server makes
	// a self-signed certificate in memory (local runs only; the chart
	// mounts one).
	serving.ServerCert.CertDirectory = ""
	serving.ServerCert.PairName = "odh-serving-api-server"
	return &Options{
		SecureServing:      serving.WithLoopback(),
		Authentication:     genericoptions.NewDelegatingAuthenticationOptions(),
		Authorization:      genericoptions.NewDelegatingAuthorizationOptions(),
		Tiers:              tier.Source{ConfigMapName: tier.ConfigMapName, NamespacePrefix: tier.DefaultNamespacePrefix},
		TokenAudience:      DefaultTokenAudience,
		TokenMaxExpiration: DefaultTokenMaxExpiration,
	}
}

// AddFlags adds the options' flags to fs, but the tier flags
// (--tier-config-namespace, ...): internal/cli registers those, for the
// controller too.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.SecureServing.AddFlags(fs)
	o.Authentication.AddFlags(fs)
	o.Authorization.AddFlags(fs)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file of the cluster; default: in-cluster, or $KUBECONFIG. Also the default of --authentication-kubeconfig and --authorization-kubeconfig")
	fs.StringVar(&o.TokenAudience, "token-audience", o.TokenAudience, "audience of the tokens tokenrequests mint; the gateway's TokenReview asks for it")
	fs.DurationVar(&o.TokenMaxExpiration, "token-max-expiration", o.TokenMaxExpiration, "longest lifetime a tokenrequest may ask for (at least "+MinTokenExpiration.String()+")")
}

// Complete fills in what the flags leave to the environment: the tier
// ConfigMap's namespace, and the kubeconfig of delegated authentication
// and authorization.
func (o *Options) Complete() error {
	if o.Tiers.ConfigMapNamespace == "" {
		ns, err := os.ReadFile(inClusterNamespaceFile)
		if err != nil {
			return fmt.Errorf("--tier-config-namespace is not set and the pod's namespace is unknown (%w)", err)
		}
		o.Tiers.ConfigMapNamespace = strings.TrimSpace(string(ns))
	}
	o.Tiers = o.Tiers.Defaults(o.Tiers.ConfigMapNamespace)
	// Out of a cluster, a single-file $KUBECONFIG is --kubeconfig, so that
	// delegated authentication and authorization find the cluster too.
	if kc := os.Getenv("KUBECONFIG"); o.Kubeconfig == "" && os.Getenv("KUBERNETES_SERVICE_HOST") == "" &&
		kc != "" && !strings.Contains(kc, string(filepath.ListSeparator)) {
		o.Kubeconfig = kc
	}
	if o.Authentication.RemoteKubeConfigFile == "" {
		o.Authentication.RemoteKubeConfigFile = o.Kubeconfig
	}
	if o.Authorization.RemoteKubeConfigFile == "" {
		o.Authorization.RemoteKubeConfigFile = o.Kubeconfig
	}
	return nil
}

// Validate reports every flag with a bad value.
func (o *Options) Validate() error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	for _, msg := range validation.IsDNS1123Label(o.Tiers.ConfigMapNamespace) {
		errs = append(errs, fmt.Errorf("--tier-config-namespace %q: %s", o.Tiers.ConfigMapNamespace, msg))
	}
	for _, msg := range validation.IsDNS1123Subdomain(o.Tiers.ConfigMapName) {
		errs = append(errs, fmt.Errorf("--tier-config-name %q: %s", o.Tiers.ConfigMapName, msg))
	}
	// A prefix followed by a one-letter tier name must be a namespace.
	for _, msg := range validation.IsDNS1123Label(o.Tiers.NamespacePrefix + "a") {
		errs = append(errs, fmt.Errorf("--tier-namespace-prefix %q: %s", o.Tiers.NamespacePrefix, msg))
	}
	if o.TokenAudience == "" {
		errs = append(errs, errors.New("--token-audience must not be empty"))
	}
	if o.TokenMaxExpiration < MinTokenExpiration {
		errs = append(errs, fmt.Errorf("--token-max-expiration %s is shorter than the minimum lifetime %s", o.TokenMaxExpiration, MinTokenExpiration))
	}
	return errors.Join(errs...)
}
