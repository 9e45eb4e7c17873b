package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/internal/controller"
)

type controllerFlags struct {
	kubeconfig string
	certMode   string
	prefix     string
	opts       controller.Options
}

func newController(s Streams) *cobra.Command { return controllerCommand(s, &controllerFlags{}) }

func controllerCommand(s Streams, f *controllerFlags) *cobra.Command {
	zapOpts := zap.Options{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the controller: server-side apply services' children, the InferencePool migration and the GIE CRD lifecycle",
		Long: `controller runs in the cluster (or against a kubeconfig). It renders every
LLMInferenceService with the same engine as render, server-side applies the
children, deletes the ones no longer rendered, moves routes from the
v1alpha2 to the v1 InferencePool and keeps the GIE CRDs applied. With
--static-mode it only does the migration and the CRDs: Helm makes the rest.
Logs are structured (zap); see the --zap-* flags.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts), zap.WriteTo(s.Err)))
			return runController(cmd.Context(), f)
		},
	}
	o := &f.opts
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; default: in-cluster, or $KUBECONFIG")
	fs.StringVar(&o.SystemNamespace, "system-namespace", engine.DefaultSystemNamespace, "where shared presets, the controller and the gateways live")
	fs.StringSliceVar(&o.WatchNamespaces, "watch-namespaces", nil, "namespaces whose services are reconciled; empty means all")
	fs.StringVar(&f.certMode, "cert-mode", string(build.CertSelfSigned), "where serving certificates come from: self-signed, cert-manager or service-ca")
	fs.StringVar(&o.CertIssuer.Kind, "cert-issuer-kind", "ClusterIssuer", "cert-manager issuer kind (cert-manager mode)")
	fs.StringVar(&o.CertIssuer.Name, "cert-issuer-name", "odh-serving-ca", "cert-manager issuer name (cert-manager mode)")
	fs.DurationVar(&o.MigrationGracePeriod, "migration-grace-period", controller.DefaultMigrationGracePeriod, "how long the v1alpha2 InferencePool stays after a route moved to v1")
	fs.BoolVar(&o.StaticMode, "static-mode", false, "only the migration (route weights) and the CRD lifecycle; Helm makes the workloads")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader among replicas (Lease "+controller.LeaderElectionID+")")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease; default: the system namespace")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", controller.DefaultMetricsBindAddress, "address of the Prometheus /metrics endpoint (plain HTTP); 0 turns it off")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", controller.DefaultHealthProbeBindAddress, "address of /healthz and /readyz; 0 turns them off")
	fs.IntVar(&o.WebhookPort, "webhook-port", controller.DefaultWebhookPort, "port of the webhook server")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", controller.DefaultWebhookCertDir, "folder of the webhook server's tls.crt and tls.key")
	fs.StringVar(&o.WebhookServiceName, "webhook-service-name", controller.DefaultWebhookServiceName, "the webhook Service in the system namespace")
	fs.BoolVar(&o.DisableWebhooks, "disable-webhooks", false, "run no webhook server (local runs against a bare API server)")
	fs.BoolVar(&o.ManageCRDs, "manage-crds", true, "apply the embedded GIE CRDs at start")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", controller.DefaultMaxConcurrentReconciles, "services reconciled at once")
	fs.StringVar(&f.prefix, "preset-prefix", preset.DefaultPrefix, "prefix of the well-known preset names")
	fs.StringVar(&o.IngressGatewayName, "ingress-gateway-name", controller.DefaultIngressGatewayName, "the Gateway managed routes attach to")
	fs.StringVar(&o.IngressGatewayNamespace, "ingress-gateway-namespace", "", "its namespace; default: the system namespace")
	fs.StringVar(&o.InternalGatewayName, "internal-gateway-name", "", "a cluster-internal Gateway (the chart's is "+controller.DefaultInternalGatewayName+"): managed routes on the ingress gateway attach to it too, reported as address gateway-internal; empty: none")
	fs.StringVar(&o.InternalGatewayNamespace, "internal-gateway-namespace", "", "its namespace; default: the system namespace")
	fs.StringToStringVar(&o.Images, "image", nil, imageFlagUsage)
	fs.StringVar(&o.ImageRegistry, "image-registry", "", imageRegistryFlagUsage)
	gofs := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(gofs)
	fs.AddGoFlagSet(gofs)
	return cmd
}

// options checks the flags and returns the controller options they give.
func (f *controllerFlags) options() (controller.Options, error) {
	mode, err := build.ParseCertMode(f.certMode)
	if err != nil {
		return controller.Options{}, err
	}
	opts := f.opts
	opts.CertMode = mode
	prefix := f.prefix
	opts.PresetPrefix = &prefix
	return opts, nil
}

func runController(ctx context.Context, f *controllerFlags) error {
	opts, err := f.options()
	if err != nil {
		return err
	}
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return controller.Run(ctx, cfg, opts)
}

// restConfig reads a kubeconfig file, or finds one as kubectl does
// (in-cluster, $KUBECONFIG, ~/.kube/config).
func restConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}
