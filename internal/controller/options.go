package controller

import (
	"errors"
	"fmt"
	"time"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/internal/certs"
)

// Options configure the controller. The zero value, after withDefaults, is
// the documented flag defaults.
type Options struct {
	// SystemNamespace holds the shared presets, the controller and the
	// gateways. Default: opendatahub.
	SystemNamespace string
	// WatchNamespaces limits the services reconciled; empty means all.
	WatchNamespaces []string
	// CertMode is where the workloads' serving certificates come from.
	// Default: self-signed (the controller writes them).
	CertMode build.CertMode
	// CertIssuer signs certificates in the cert-manager mode.
	CertIssuer build.CertIssuer
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
	// Default: :8080.
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz; "0" turns it off.
	// Default: :8081.
	HealthProbeBindAddress string

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
	// MaxConcurrentReconciles is the number of workers. Default: 4.
	MaxConcurrentReconciles int

	// PresetPrefix is put before the well-known preset names. Nil means
	// "kserve-".
	PresetPrefix *string
	// IngressGatewayName and IngressGatewayNamespace name the gateway the
	// managed route attaches to. Defaults: kserve-ingress-gateway in the
	// system namespace.
	IngressGatewayName      string
	IngressGatewayNamespace string
	// InternalGatewayName names the cluster-internal gateway whose URLs are
	// reported as gateway-internal; empty means none (the command's flag
	// defaults to kserve-internal-gateway). Its namespace defaults to the
	// system namespace.
	InternalGatewayName      string
	InternalGatewayNamespace string

	// Images override the built-in presets/images.yaml, by key.
	Images map[string]string
	// StorageInitializerImage downloads hf:// and s3:// models. Default:
	// Images["storageInitializer"].
	StorageInitializerImage string
	// ImageRegistry replaces the registry of every image presets name and
	// of the storage initializer (a mirror); empty keeps them.
	ImageRegistry string

	// SyncPeriod is how often the cache delivers every object again, which
	// reconciles every service; zero means controller-runtime's default.
	SyncPeriod time.Duration

	// Now is the clock; nil means time.Now. Tests move it forward.
	Now func() time.Time

	// ca is the self-signed CA shared by the reconciler and the webhook's
	// certificate; Run sets it.
	ca *certs.Authority
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
	DefaultIngressGatewayName      = "kserve-ingress-gateway"
	DefaultInternalGatewayName     = "kserve-internal-gateway"

	// LeaderElectionID is the Lease the replicas compete for.
	LeaderElectionID = "odh-serving-controller.opendatahub.io"
	// FieldManager writes children, CRDs and status.
	FieldManager = "odh-serving"
)

func (o Options) withDefaults() Options {
	if o.SystemNamespace == "" {
		o.SystemNamespace = engine.DefaultSystemNamespace
	}
	if o.CertMode == "" {
		o.CertMode = build.CertSelfSigned
	}
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
	if o.PresetPrefix == nil {
		p := preset.DefaultPrefix
		o.PresetPrefix = &p
	}
	if o.IngressGatewayName == "" {
		o.IngressGatewayName = DefaultIngressGatewayName
	}
	if o.IngressGatewayNamespace == "" {
		o.IngressGatewayNamespace = o.SystemNamespace
	}
	if o.InternalGatewayName != "" && o.InternalGatewayNamespace == "" {
		o.InternalGatewayNamespace = o.SystemNamespace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if _, err := build.ParseCertMode(string(o.CertMode)); err != nil {
		errs = append(errs, fmt.Errorf("--cert-mode: %w", err))
	}
	if o.MigrationGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--migration-grace-period %s: must not be negative", o.MigrationGracePeriod))
	}
	if err := engine.CheckImageRegistry(o.ImageRegistry); err != nil {
		errs = append(errs, fmt.Errorf("--image-registry: %w", err))
	}
	if o.CertMode == build.CertManager && o.CertIssuer.Name == "" {
		errs = append(errs, errors.New("--cert-issuer-name: required with --cert-mode=cert-manager"))
	}
	return errors.Join(errs...)
}

// engineOptions are the render options for a phase.
func (o Options) engineOptions(images map[string]string, phase build.Phase) engine.Options {
	return engine.Options{
		SystemNamespace:          o.SystemNamespace,
		PresetPrefix:             o.PresetPrefix,
		Phase:                    phase,
		IngressGatewayName:       o.IngressGatewayName,
		IngressGatewayNamespace:  o.IngressGatewayNamespace,
		InternalGatewayName:      o.InternalGatewayName,
		InternalGatewayNamespace: o.InternalGatewayNamespace,
		StorageInitializerImage:  o.StorageInitializerImage,
		ImageRegistry:            o.ImageRegistry,
		Images:                   images,
		CertMode:                 o.CertMode,
		CertIssuer:               o.CertIssuer,
	}
}
