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
)

// Defaults of the flags, and the fixed bounds of a token's lifetime.
const (
	DefaultSecurePort          = 8443
	DefaultTierConfigName      = "tier-to-group-mapping"
	DefaultTierNamespacePrefix = "maas-default-gateway-tier-"
	DefaultTokenAudience       = "maas-default-gateway-sa"
	DefaultTokenMaxExpiration  = 30 * 24 * time.Hour
	// MinTokenExpiration is the shortest token a TokenRequest may ask
	// for; it is also the Kubernetes TokenRequest API's minimum.
	MinTokenExpiration = 10 * time.Minute
	// DefaultTokenExpiration is a token's lifetime when the TokenRequest
	// names none.
	DefaultTokenExpiration = 4 * time.Hour
	// TierConfigKey is the key of the tier ConfigMap that holds the tiers.
	TierConfigKey = "tiers"
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
	// TierConfigNamespace and TierConfigName name the ConfigMap whose key
	// "tiers" lists the tiers in ODH's format.
	TierConfigNamespace string
	TierConfigName      string
	// TierNamespacePrefix + a tier's name is the tier's namespace, where
	// the ServiceAccounts of its users live.
	TierNamespacePrefix string
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
		SecureServing:       serving.WithLoopback(),
		Authentication:      genericoptions.NewDelegatingAuthenticationOptions(),
		Authorization:       genericoptions.NewDelegatingAuthorizationOptions(),
		TierConfigName:      DefaultTierConfigName,
		TierNamespacePrefix: DefaultTierNamespacePrefix,
		TokenAudience:       DefaultTokenAudience,
		TokenMaxExpiration:  DefaultTokenMaxExpiration,
	}
}

// AddFlags adds the options' flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.SecureServing.AddFlags(fs)
	o.Authentication.AddFlags(fs)
	o.Authorization.AddFlags(fs)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file of the cluster; default: in-cluster, or $KUBECONFIG. Also the default of --authentication-kubeconfig and --authorization-kubeconfig")
	fs.StringVar(&o.TierConfigNamespace, "tier-config-namespace", o.TierConfigNamespace, "namespace of the tier ConfigMap; default: the pod's own namespace")
	fs.StringVar(&o.TierConfigName, "tier-config-name", o.TierConfigName, "name of the ConfigMap whose key \""+TierConfigKey+"\" lists the tiers (ODH's format)")
	fs.StringVar(&o.TierNamespacePrefix, "tier-namespace-prefix", o.TierNamespacePrefix, "a tier's namespace is this prefix followed by the tier's name; minted ServiceAccounts live there")
	fs.StringVar(&o.TokenAudience, "token-audience", o.TokenAudience, "audience of the tokens tokenrequests mint; the gateway's TokenReview asks for it")
	fs.DurationVar(&o.TokenMaxExpiration, "token-max-expiration", o.TokenMaxExpiration, "longest lifetime a tokenrequest may ask for (at least "+MinTokenExpiration.String()+")")
}

// Complete fills in what the flags leave to the environment: the tier
// ConfigMap's namespace, and the kubeconfig of delegated authentication
// and authorization.
func (o *Options) Complete() error {
	if o.TierConfigNamespace == "" {
		ns, err := os.ReadFile(inClusterNamespaceFile)
		if err != nil {
			return fmt.Errorf("--tier-config-namespace is not set and the pod's namespace is unknown (%w)", err)
		}
		o.TierConfigNamespace = strings.TrimSpace(string(ns))
	}
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
	for _, msg := range validation.IsDNS1123Label(o.TierConfigNamespace) {
		errs = append(errs, fmt.Errorf("--tier-config-namespace %q: %s", o.TierConfigNamespace, msg))
	}
	for _, msg := range validation.IsDNS1123Subdomain(o.TierConfigName) {
		errs = append(errs, fmt.Errorf("--tier-config-name %q: %s", o.TierConfigName, msg))
	}
	if o.TierNamespacePrefix != "" {
		// A prefix followed by a one-letter tier name must be a namespace.
		for _, msg := range validation.IsDNS1123Label(o.TierNamespacePrefix + "a") {
			errs = append(errs, fmt.Errorf("--tier-namespace-prefix %q: %s", o.TierNamespacePrefix, msg))
		}
	}
	if o.TokenAudience == "" {
		errs = append(errs, errors.New("--token-audience must not be empty"))
	}
	if o.TokenMaxExpiration < MinTokenExpiration {
		errs = append(errs, fmt.Errorf("--token-max-expiration %s is shorter than the minimum lifetime %s", o.TokenMaxExpiration, MinTokenExpiration))
	}
	return errors.Join(errs...)
}
