package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/controller"
)

type controllerFlags struct {
	kubeconfig string
	opts       controller.Options
	// monitoring is --monitoring: opts.DisableMonitoring negated.
	monitoring bool
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
The render flags are render's and post-render's; the migration phase is
decided per service. Logs are structured (zap); see the --zap-* flags.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts), zap.WriteTo(s.Err)))
			return runController(cmd.Context(), f)
		},
	}
	o := &f.opts
	fs := cmd.Flags()
	o.AddFlags(fs)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; default: in-cluster, or $KUBECONFIG")
	fs.StringSliceVar(&o.WatchNamespaces, "watch-namespaces", nil, "namespaces whose services are reconciled; empty means all")
	fs.DurationVar(&o.MigrationGracePeriod, "migration-grace-period", controller.DefaultMigrationGracePeriod, "how long the v1alpha2 InferencePool stays after a route moved to v1")
	fs.BoolVar(&o.StaticMode, "static-mode", false, "only the migration (route weights) and the CRD lifecycle; Helm makes the workloads")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader among replicas (Lease "+controller.LeaderElectionID+")")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease; default: the system namespace")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", controller.DefaultMetricsBindAddress,
		"address of the Prometheus /metrics endpoint (HTTPS; callers need a bearer token allowed get on /metrics); 0 turns it off")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "folder of the /metrics server's tls.crt and tls.key; empty: a self-signed certificate")
	fs.BoolVar(&o.MetricsInsecure, "metrics-insecure", false, "serve /metrics over plain HTTP without authentication (local runs on loopback only)")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", controller.DefaultHealthProbeBindAddress, "address of /healthz and /readyz; 0 turns them off")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", "", "address of Go's /debug/pprof profiles (they show what the process holds: keep it on localhost); empty or 0: off")
	fs.IntVar(&o.WebhookPort, "webhook-port", controller.DefaultWebhookPort, "port of the webhook server")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", controller.DefaultWebhookCertDir, "folder of the webhook server's tls.crt and tls.key")
	fs.StringVar(&o.WebhookServiceName, "webhook-service-name", controller.DefaultWebhookServiceName, "the webhook Service in the system namespace")
	fs.BoolVar(&o.DisableWebhooks, "disable-webhooks", false, "run no webhook server (local runs against a bare API server)")
	fs.BoolVar(&o.ManageCRDs, "manage-crds", true, "apply the embedded GIE CRDs at start")
	fs.BoolVar(&o.MaaS, "maas", false, "publish services to Models-as-a-Service: a service annotated "+tier.AnnotationTiers+
		" gets the Role <service>-model-user and a RoleBinding per allowed tier (not in static mode)")
	addTierFlags(fs, &o.Tiers)
	fs.BoolVar(&f.monitoring, "monitoring", true, "give every service its PodMonitor and ServiceMonitor when the Prometheus Operator's CRDs are served")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", controller.DefaultMaxConcurrentReconciles, "services reconciled at once")
	gofs := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(gofs)
	fs.AddGoFlagSet(gofs)
	return cmd
}

// controllerGCPercent is the controller's garbage collection target
// unless GOGC is set: a long-running process whose live heap is mostly its
// cache, so memory is the cost to bound. At 1,000 prefill/decode services
// (BenchmarkConverge) the peak RSS was 211-218 MiB instead of 302-315 at the
// default 100, for 15 % more of the controller's processor time (16.3
// against 14.2 s).
const controllerGCPercent = 50

func runController(ctx context.Context, f *controllerFlags) error {
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(controllerGCPercent))
	}
	f.opts.DisableMonitoring = !f.monitoring
	return controller.Run(ctx, cfg, f.opts)
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
