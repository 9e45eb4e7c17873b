package controller

import (
	"errors"
	"fmt"
	"time"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/certs"
)

// Options configure the controller. The zero value, after withDefaults, is
// the documented flag defaults.
type Options struct {
	// Options are the render options, the same as render's and
	// post-render's (the flags engine.Options.AddFlags registers). Phase is
	// ignored: the controller decides it per service. Images override the
	// built-in presets/images.yaml by key, and their storageInitializer key
	// is the storage initializer's image unless StorageInitializerImage is
	// set.
	engine.Options

	// MaaS publishes services to Models-as-a-Service: a service with the
	// tiers annotation gets the RBAC that lets its tiers call it, from the
	// tier list in the ConfigMap Tiers names. Not in static mode.
	MaaS bool
	// Tiers say where the tier list is and how tiers' namespaces are
	// named: the same flags as the MaaS API server's. The ConfigMap's
	// namespace defaults to the system namespace.
	Tiers tier.Source

	// WatchNamespaces limits the services reconciled; empty means all.
	WatchNamespaces []string
	// MigrationGracePeriod is how long the v1alpha2 InferencePool is kept
	// after a route moved to v1. Default: 24h.
	MigrationGracePeriod time.Duration
	// StaticMode runs only the migration (route weights) and the CRD
	// lifecycle; Helm makes the workloads.
	StaticMode bool

	// LeaderElect turns on leader election, in LeaderElectionNamespace
	// (default: the system namespace).
	LeaderElect             bool
	LeaderElectionNamespace string
	// MetricsBindAddress serves Prometheus /metrics; "0" turns it off.
	// Default: :8080. It is HTTPS (a self-signed certificate unless
	// MetricsCertDir holds one), and every request must carry a bearer
	// token that the API server authenticates (TokenReview) and authorizes
	// for get on the non-resource URL /metrics (SubjectAccessReview).
	MetricsBindAddress string
	// MetricsCertDir holds tls.crt and tls.key for /metrics; empty or
	// without them, controller-runtime makes a self-signed certificate.
	MetricsCertDir string
	// MetricsInsecure serves /metrics over plain HTTP without
	// authentication: only for local runs on a loopback address.
	MetricsInsecure bool
	// HealthProbeBindAddress serves /healthz and /readyz; "0" turns it off.
	// Default: :8081.
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's /debug/pprof (heap and CPU profiles);
	// "" (the default) or "0" turns it off. Profiles show what the process
	// holds in memory: bind it to localhost, or protect it.
	PprofBindAddress string

	// WebhookPort and WebhookCertDir are the webhook server's. Defaults:
	// 9443 and /tmp/k8s-webhook-server/serving-certs.
	WebhookPort    int
	WebhookCertDir string
	// WebhookServiceName is the webhook Service in the system namespace.
	// Default: odh-serving-webhook.
	WebhookServiceName string
	// DisableWebhooks runs no webhook server (local runs against a bare
	// API server).
	DisableWebhooks bool

	// ManageCRDs applies the embedded GIE CRDs at start.
	ManageCRDs bool
	// DisableMonitoring renders no monitors, even where the Prometheus
	// Operator's CRDs are served; the controller then does not watch them.
	DisableMonitoring bool
	// MaxConcurrentReconciles is the number of workers. Default: 4.
	MaxConcurrentReconciles int

	// SyncPeriod is how often the cache delivers every object again, which
	// reconciles every service; zero means controller-runtime's default.
	SyncPeriod time.Duration

	// StartTimeout bounds the start, before the manager runs (see Run).
	// Default: DefaultStartTimeout.
	StartTimeout time.Duration

	// Now is the clock; nil means time.Now. Tests move it forward.
	Now func() time.Time

	// ca is the self-signed CA shared by the reconciler and the webhook's
	// certificate; Run sets it.
	ca *certs.Authority
	// fresh tracks which kinds' caches are behind the API server, shared
	// by the manager's cache and the reconciler; Run sets it.
	fresh *freshness
}

// Defaults of the options that have one.
const (
	DefaultMigrationGracePeriod    = 24 * time.Hour
	DefaultMetricsBindAddress      = ":8080"
	DefaultHealthProbeBindAddress  = ":8081"
	DefaultWebhookPort             = 9443
	DefaultWebhookCertDir          = "/tmp/k8s-webhook-server/serving-certs"
	DefaultWebhookServiceName      = "odh-serving-webhook"
	DefaultMaxConcurrentReconciles = 4

	// MaaSAPIService, MaaSAPIServerService and MaaSAPIServerSecret are the
	// chart's MaaS API server: in the self-signed mode (with MaaS) the
	// controller keeps the secret valid for the Service and injects its CA
	// into the APIService, as it does for the webhook.
	MaaSAPIService       = "v1alpha1.modelserving.opendatahub.io"
	MaaSAPIServerService = "odh-serving-api-server"
	MaaSAPIServerSecret  = "odh-serving-api-server-cert" //nolint:gosec // a Secret's name, not a credential

	// LeaderElectionID is the Lease the replicas compete for.
	LeaderElectionID = "odh-serving-controller.opendatahub.io"
)

func (o Options) withDefaults() Options {
	o.Options = o.Defaults() // the engine options' defaults
	o.Tiers = o.Tiers.Defaults(o.SystemNamespace)
	if o.MigrationGracePeriod == 0 {
		o.MigrationGracePeriod = DefaultMigrationGracePeriod
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = o.SystemNamespace
	}
	if o.MetricsBindAddress == "" {
		o.MetricsBindAddress = DefaultMetricsBindAddress
	}
	if o.HealthProbeBindAddress == "" {
		o.HealthProbeBindAddress = DefaultHealthProbeBindAddress
	}
	if o.WebhookPort == 0 {
		o.WebhookPort = DefaultWebhookPort
	}
	if o.WebhookCertDir == "" {
		o.WebhookCertDir = DefaultWebhookCertDir
	}
	if o.WebhookServiceName == "" {
		o.WebhookServiceName = DefaultWebhookServiceName
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// validate checks the options; errors name the fields, not flags (Run
// may be called without a command line).
func (o Options) validate() error {
	errs := []error{o.Validate()} // the engine options' checks
	if o.MigrationGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("field MigrationGracePeriod %s: must not be negative", o.MigrationGracePeriod))
	}
	if o.MaaS && o.StaticMode {
		errs = append(errs, errors.New("field MaaS: not in static mode, where Helm makes the children"))
	}
	if o.CertMode == convention.CertManager && o.CertIssuer.Name == "" {
		errs = append(errs, errors.New("field CertIssuer.Name: required when CertMode is cert-manager"))
	}
	return errors.Join(errs...)
}

// monitoring reports whether services get monitors where the Prometheus
// Operator's CRDs are served: not in static mode, where Helm renders the
// children, nor when turned off.
func (o Options) monitoring() bool { return !o.DisableMonitoring && !o.StaticMode }

// engineOptions are the render options for a phase, with images (the
// built-in ones with Images over them).
func (o Options) engineOptions(images map[string]string, phase convention.Phase) engine.Options {
	opts := o.Options
	opts.Images = images
	opts.Phase = phase
	return opts
}
