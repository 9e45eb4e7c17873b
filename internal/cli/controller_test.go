package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/controller"
)

func TestControllerFlags(t *testing.T) {
	parse := func(t *testing.T, args ...string) controller.Options {
		t.Helper()
		f := &controllerFlags{}
		var out bytes.Buffer
		cmd := controllerCommand(Streams{In: strings.NewReader(""), Out: &out, Err: &out}, f)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return f.opts
	}
	defaults := parse(t)
	prefix := "kserve-"
	want := controller.Options{
		Options: engine.Options{
			SystemNamespace: "opendatahub", CertMode: convention.CertSelfSigned, OCIModelSource: convention.OCIModelcar,
			CertIssuer:   build.CertIssuer{Kind: "ClusterIssuer", Name: "odh-serving-ca"},
			PresetPrefix: &prefix, IngressGatewayName: "kserve-ingress-gateway",
			Prometheus:        build.Prometheus{TriggerAuthKind: "TriggerAuthentication"},
			AuthAudiences:     []string{convention.DefaultAuthAudience},
			MaaSTokenAudience: "maas-default-gateway-sa", MaaSAPIServerURL: "https://kubernetes.default.svc",
			MaaSTierReviewSecret: "odh-serving-maas-tier-reviewer", MaaSTierCacheTTL: 300,
		},
		MigrationGracePeriod: 24 * time.Hour, MetricsBindAddress: ":8080", HealthProbeBindAddress: ":8081",
		WebhookPort: 9443, WebhookCertDir: "/tmp/k8s-webhook-server/serving-certs", WebhookServiceName: "odh-serving-webhook",
		ManageCRDs: true, MaxConcurrentReconciles: 4,
		Tiers: tier.Source{ConfigMapName: "tier-to-group-mapping", NamespacePrefix: "maas-default-gateway-tier-"},
	}
	if diff := cmp.Diff(want, defaults, cmp.AllowUnexported(controller.Options{})); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}

	got := parse(t, "--system-namespace=odh", "--watch-namespaces=a,b", "--cert-mode=cert-manager",
		"--cert-issuer-kind=Issuer", "--cert-issuer-name=ca", "--migration-grace-period=1h", "--static-mode",
		"--leader-elect", "--leader-election-namespace=le", "--metrics-bind-address=:9090", "--health-probe-bind-address=0",
		"--pprof-bind-address=127.0.0.1:6060", "--webhook-port=9444", "--webhook-cert-dir=/certs", "--webhook-service-name=hook", "--disable-webhooks",
		"--manage-crds=false", "--max-concurrent-reconciles=8", "--preset-prefix=", "--ingress-gateway-name=gw",
		"--ingress-gateway-namespace=gw-ns", "--internal-gateway-name=kserve-internal-gateway", "--internal-gateway-namespace=gw-ns",
		"--image=vllm=example.com/vllm:1", "--image=endpointPicker=example.com/epp:2", "--image=storageInitializer=example.com/si:3",
		"--image-registry=mirror.example.com", "--oci-model-source=image-volume", "--zap-log-level=debug",
		"--maas", "--tier-config-namespace=maas", "--tier-config-name=tiers", "--tier-namespace-prefix=acme-tier-",
		"--prometheus-url=https://thanos:9091", "--prometheus-auth-modes=bearer", "--prometheus-trigger-auth-name=prom",
		"--prometheus-trigger-auth-kind=ClusterTriggerAuthentication", "--prometheus-unsafe-ssl",
		"--enable-auth", "--auth-audiences=https://a.example.com,https://b.example.com",
		"--maas-token-audience=acme-sa", "--maas-api-server-url=https://api.acme:6443", "--maas-tier-review-secret=tr",
		"--maas-tier-cache-ttl=0")
	empty := ""
	want = controller.Options{
		Options: engine.Options{
			SystemNamespace: "odh", CertMode: convention.CertManager, CertIssuer: build.CertIssuer{Kind: "Issuer", Name: "ca"},
			PresetPrefix: &empty, IngressGatewayName: "gw", IngressGatewayNamespace: "gw-ns",
			InternalGatewayName: "kserve-internal-gateway", InternalGatewayNamespace: "gw-ns",
			Images:        map[string]string{"vllm": "example.com/vllm:1", "endpointPicker": "example.com/epp:2", "storageInitializer": "example.com/si:3"},
			ImageRegistry: "mirror.example.com", OCIModelSource: convention.OCIImageVolume,
			Prometheus: build.Prometheus{URL: "https://thanos:9091", AuthModes: "bearer", TriggerAuthName: "prom",
				TriggerAuthKind: "ClusterTriggerAuthentication", UnsafeSSL: true},
			Auth: true, AuthAudiences: []string{"https://a.example.com", "https://b.example.com"},
			MaaSTokenAudience: "acme-sa", MaaSAPIServerURL: "https://api.acme:6443", MaaSTierReviewSecret: "tr",
		},
		WatchNamespaces: []string{"a", "b"}, MigrationGracePeriod: time.Hour, StaticMode: true,
		LeaderElect: true, LeaderElectionNamespace: "le", MetricsBindAddress: ":9090", HealthProbeBindAddress: "0",
		PprofBindAddress: "127.0.0.1:6060", WebhookPort: 9444, WebhookCertDir: "/certs", WebhookServiceName: "hook", DisableWebhooks: true,
		MaxConcurrentReconciles: 8,
		MaaS:                    true, Tiers: tier.Source{ConfigMapNamespace: "maas", ConfigMapName: "tiers", NamespacePrefix: "acme-tier-"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(controller.Options{})); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}

	// Bad values fail while the flags are parsed, naming the flag.
	for _, arg := range []string{"--cert-mode=vault", "--image-registry=https://mirror", "--oci-model-source=pvc"} {
		cmd := controllerCommand(Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, &controllerFlags{})
		err := cmd.ParseFlags([]string{arg})
		name, _, _ := strings.Cut(arg, "=")
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v; want an error naming the flag", arg, err)
		}
	}
}
