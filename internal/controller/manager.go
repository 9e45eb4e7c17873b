package controller

import (
	"context"
	"crypto/tls"

	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
)

// Run starts the manager with the controller, the CRD lifecycle (with
// ManageCRDs) and, unless DisableWebhooks, the webhooks, and blocks until
// ctx is done. The controller and the CRD lifecycle run on the leader only:
// a standby replica sends no write. The start (everything before the
// manager runs) ends with ctx, or after StartTimeout, with an error naming
// the step it was waiting on.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return err
	}
	startCtx, cancel := startContext(ctx, opts.StartTimeout)
	defer cancel()
	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	// Before the manager's cache runs, read and write directly.
	direct, err := client.New(unthrottled(cfg), client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	opts.fresh = newFreshness(scheme)
	mgr, err := NewManager(startCtx, cfg, opts)
	if err != nil {
		return err
	}
	if opts.ManageCRDs {
		if err := mgr.Add(crdApplier{client: direct}); err != nil {
			return fmt.Errorf("add the CRD lifecycle: %w", err)
		}
	}
	if opts.CertMode == convention.CertSelfSigned {
		opts.ca = newAuthority(mgr, opts)
		if !opts.DisableWebhooks {
			w := &certs.WebhookCerts{
				Client: direct, Namespace: opts.SystemNamespace, ServiceName: opts.WebhookServiceName,
				CertDir: opts.WebhookCertDir, CA: opts.ca,
			}
			if opts.StaticMode {
				// The chart's replicas webhook, static mode's only.
				w.MutatingConfigName = webhook.MutatingConfigurationName
			}
			err := startStep(startCtx, "ensure the webhook's serving certificate", func(ctx context.Context) error {
				_, err := w.Ensure(ctx)
				return err
			})
			if err != nil {
				return err
			}
			if err := mgr.Add(w); err != nil {
				return err
			}
		}
	}
	if opts.MaaS && opts.CertMode == convention.CertSelfSigned {
		err := mgr.Add(&certs.APIServiceCerts{
			Client: direct, CA: opts.ca, ServiceName: MaaSAPIServerService, APIService: MaaSAPIService,
			Secret: types.NamespacedName{Namespace: opts.SystemNamespace, Name: MaaSAPIServerSecret},
		})
		if err != nil {
			return fmt.Errorf("add the MaaS API server's certificates: %w", err)
		}
	}
	if err := Setup(startCtx, mgr, opts); err != nil {
		return err
	}
	cancel()
	return mgr.Start(ctx)
}

// NewManager returns a manager for the controller: its scheme, a cache that
// keeps, of the kinds users make many of too, only odh-serving's children
// and secrets (scope.go), and only the watched namespaces with
// WatchNamespaces; leader election, metrics, health probes and the webhook
// server. What it reads from the API server
// (with WatchNamespaces, whether Gateways are served) it reads within ctx
// and StartTimeout.
func NewManager(ctx context.Context, cfg *rest.Config, opts Options) (manager.Manager, error) {
	opts = opts.withDefaults()
	ctx, cancel := startContext(ctx, opts.StartTimeout)
	defer cancel()
	cfg = unthrottled(cfg)
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	cacheOpts := cacheOptions(opts)
	if len(opts.WatchNamespaces) > 0 {
		// Gateways named in gateway.refs may be anywhere. The cache can be
		// told so only for an API that is served at start.
		if ok, err := crdServed(ctx, cfg, scheme, crdGateway); err != nil {
			return nil, err
		} else if ok {
			cacheOpts.ByObject[&gatewayv1.Gateway{}] = cache.ByObject{Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}}
		}
	}
	mgrOpts := ctrl.Options{
		Scheme: scheme,
		Cache:  cacheOpts,
		// Kinds without Go types (KEDA's ScaledObjects, cert-manager's
		// Certificates, Istio's DestinationRules, the Prometheus
		// Operator's monitors) are read from the cache too, with its indexes.
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		MapperProvider:                newRESTMapper,
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		PprofBindAddress:              opts.PprofBindAddress,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	}
	if !opts.DisableWebhooks {
		mgrOpts.WebhookServer = ctrlwebhook.NewServer(ctrlwebhook.Options{
			Port: opts.WebhookPort, CertDir: opts.WebhookCertDir, TLSOpts: []func(*tls.Config){WebhookTLS},
		})
	}
	// The cache maps the kinds it selects, which asks discovery.
	var mgr manager.Manager
	if err := startStep(ctx, "create the manager", func(context.Context) error {
		var err error
		mgr, err = ctrl.NewManager(cfg, mgrOpts)
		return err
	}); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if !opts.DisableWebhooks {
		v, err := validator(mgr, opts)
		if err != nil {
			return nil, err
		}
		webhook.Register(mgr.GetWebhookServer(), v)
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// validator is the validating webhook of this controller: it judges a
// service's route with the presets and render options the controller
// renders it with. It reads the presets from the API server, not the
// cache: a service may be written in a namespace the controller does not
// watch (WatchNamespaces), and admission is rare.
func validator(mgr manager.Manager, opts Options) (webhook.Validator, error) {
	images, builtin, err := opts.builtins()
	if err != nil {
		return webhook.Validator{}, err
	}
	presets := &presetCache{reader: mgr.GetAPIReader(), systemNamespace: opts.SystemNamespace, builtin: builtin}
	return webhook.Validator{Presets: presets.catalog, Options: opts.engineOptions(images, "")}, nil
}

// crdServed reports whether the CRD name is established and serves the
// version the controller needs.
func crdServed(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, name string) (bool, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return false, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err = startStep(ctx, "get CustomResourceDefinition "+name+" from "+cfg.Host, func(ctx context.Context) error {
		return c.Get(ctx, types.NamespacedName{Name: name}, crd)
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return served(crd, optionalCRDs[name].Version), nil
}

// unthrottled turns off client-side rate limiting when the config does not
// set it (client-go's default of 5 requests a second would cap the
// controller); the API server's priority and fairness limits instead.
func unthrottled(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
	return cfg
}

// metricsOptions serves /metrics over HTTPS to callers the API server
// authenticates and authorizes for get on /metrics (the chart's ClusterRole
// odh-serving-metrics-reader grants it), unless MetricsInsecure.
func metricsOptions(opts Options) metricsserver.Options {
	if opts.MetricsInsecure {
		return metricsserver.Options{BindAddress: opts.MetricsBindAddress}
	}
	return metricsserver.Options{
		BindAddress:    opts.MetricsBindAddress,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
		CertDir:        opts.MetricsCertDir,
		TLSOpts:        []func(*tls.Config){WebhookTLS},
	}
}

// WebhookTLS sets the webhook and metrics servers' floor to TLS 1.2
// explicitly rather than leaning on Go's default, and serves HTTP/1.1 only:
// the API server and Prometheus need nothing more, and HTTP/2 brings the
// rapid-reset class of attacks.
func WebhookTLS(c *tls.Config) {
	c.MinVersion = tls.VersionTLS12
	c.NextProtos = []string{"http/1.1"}
}
