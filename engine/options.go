package engine

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/preset"
)

// Defaults returns o with every unset option that has a default set to it,
// except Phase (Render takes v1; the controller decides it per service)
// and the images (Render resolves them).
func (o Options) Defaults() Options {
	if o.SystemNamespace == "" {
		o.SystemNamespace = DefaultSystemNamespace
	}
	if o.PresetPrefix == nil {
		p := preset.DefaultPrefix
		o.PresetPrefix = &p
	}
	if o.IngressGatewayName == "" {
		o.IngressGatewayName = convention.IngressGatewayName
	}
	if o.IngressGatewayNamespace == "" {
		o.IngressGatewayNamespace = o.SystemNamespace
	}
	if o.InternalGatewayName != "" && o.InternalGatewayNamespace == "" {
		o.InternalGatewayNamespace = o.SystemNamespace
	}
	if o.MaaSGatewayName != "" && o.MaaSGatewayNamespace == "" {
		o.MaaSGatewayNamespace = o.SystemNamespace
	}
	if o.MaaSTokenAudience == "" {
		o.MaaSTokenAudience = convention.MaaSTokenAudience
	}
	if o.MaaSAPIServerURL == "" {
		o.MaaSAPIServerURL = convention.MaaSAPIServerURL
	}
	if o.MaaSTierReviewSecret == "" {
		o.MaaSTierReviewSecret = convention.MaaSTierReviewSecret
	}
	if o.CertMode == "" {
		o.CertMode = convention.CertSelfSigned
	}
	if o.OCIModelSource == "" {
		o.OCIModelSource = convention.OCIModelcar
	}
	if len(o.AuthAudiences) == 0 {
		o.AuthAudiences = []string{convention.DefaultAuthAudience}
	}
	return o
}

// Validate checks the options that take only some values. Errors name the
// option's field.
func (o Options) Validate() error {
	errs := []error{
		checkSet("Phase", o.Phase, convention.ParsePhase),
		checkSet("CertMode", o.CertMode, convention.ParseCertMode),
		checkSet("OCIModelSource", o.OCIModelSource, convention.ParseOCIModelSource),
		checkSet("GatewayTLS", o.GatewayTLS, convention.ParseGatewayTLS),
	}
	if err := CheckImageRegistry(o.ImageRegistry); err != nil {
		errs = append(errs, fmt.Errorf("field ImageRegistry: %w", err))
	}
	if o.MaaSTierCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("field MaaSTierCacheTTL %d: must not be negative (0: not cached)", o.MaaSTierCacheTTL))
	}
	if err := checkMaaSAPIServerURL(o.MaaSAPIServerURL); err != nil {
		errs = append(errs, fmt.Errorf("field MaaSAPIServerURL: %w", err))
	}
	if err := checkPrometheus(o.Prometheus); err != nil {
		errs = append(errs, fmt.Errorf("field Prometheus: %w", err))
	}
	for i, a := range o.AuthAudiences {
		if strings.TrimSpace(a) == "" {
			errs = append(errs, fmt.Errorf("field AuthAudiences[%d]: empty; name an audience of the API server's tokens", i))
		}
	}
	for _, ns := range o.MonitoringNamespaces {
		if msgs := utilvalidation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("field MonitoringNamespaces: %q: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	for _, h := range o.AllowedHostnames {
		if err := checkHostname(h); err != nil {
			errs = append(errs, fmt.Errorf("field AllowedHostnames: %w", err))
		}
	}
	for _, a := range o.KEDAAllowedServerAddresses {
		if !httpAddress(a) {
			errs = append(errs, fmt.Errorf("field KEDAAllowedServerAddresses: %q: want an http:// or https:// address", a))
		}
	}
	return errors.Join(errs...)
}

// AddFlags registers a flag for every option but Phase on fs, with the
// defaults as flag defaults, so the commands that render (render,
// post-render) and the controller take the same flags. Phase is left
// out: the controller decides it per service, and the commands that
// render add --migration-phase with AddPhaseFlag. Images holds only the
// --image overrides; the caller adds them over the built-in images.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	if o.PresetPrefix == nil {
		o.PresetPrefix = new(string)
	}
	if o.CertIssuer == (build.CertIssuer{}) {
		o.CertIssuer = build.CertIssuer{Kind: convention.CertIssuerKind, Name: convention.CertIssuerName}
	}
	fs.StringVar(&o.SystemNamespace, "system-namespace", DefaultSystemNamespace,
		"where the shared presets, the controller and the gateways live")
	fs.StringVar(o.PresetPrefix, "preset-prefix", preset.DefaultPrefix, "prefix of the well-known preset names")
	fs.Var(newParsed(&o.CertMode, convention.CertSelfSigned, convention.ParseCertMode), "cert-mode",
		"where serving certificates come from: self-signed (by the controller), service-ca (OpenShift) or cert-manager")
	fs.Var(newParsed(&o.OCIModelSource, convention.OCIModelcar, convention.ParseOCIModelSource), "oci-model-source",
		"how oci:// models reach vLLM: modelcar (a container beside it; any cluster) or image-volume (needs the ImageVolume feature gate)")
	fs.StringVar(&o.CertIssuer.Kind, "cert-issuer-kind", o.CertIssuer.Kind, "cert-manager issuer kind (cert-manager mode)")
	fs.StringVar(&o.CertIssuer.Name, "cert-issuer-name", o.CertIssuer.Name, "cert-manager issuer name (cert-manager mode)")
	fs.StringVar(&o.IngressGatewayName, "ingress-gateway-name", convention.IngressGatewayName, "the Gateway managed routes attach to")
	fs.StringVar(&o.IngressGatewayNamespace, "ingress-gateway-namespace", "", "its namespace; default: the system namespace")
	fs.StringVar(&o.InternalGatewayName, "internal-gateway-name", "",
		"a Gateway for in-cluster callers (the chart's is "+convention.InternalGatewayName+
			"): managed routes on the ingress gateway attach to it too; empty: none")
	fs.StringVar(&o.InternalGatewayNamespace, "internal-gateway-namespace", "", "its namespace; default: the system namespace")
	fs.StringVar(&o.MaaSGatewayName, "maas-gateway-name", "",
		"the Models-as-a-Service Gateway (ODH's maas-default-gateway): with MaaS tiers, the managed route of a service "+
			"whose tiers annotation grants a tier attaches to it too; empty: none")
	fs.StringVar(&o.MaaSGatewayNamespace, "maas-gateway-namespace", "", "its namespace; default: the system namespace")
	fs.StringVar(&o.MaaSTokenAudience, "maas-token-audience", convention.MaaSTokenAudience,
		"the audience of the minted MaaS tokens, which the AuthPolicy of a service's MaaS route asks the TokenReview for "+
			"(the API server's --token-audience)")
	fs.StringVar(&o.MaaSAPIServerURL, "maas-api-server-url", convention.MaaSAPIServerURL,
		"the cluster's API server as Kuadrant's Authorino reaches it: the MaaS routes' AuthPolicies POST tierreviews to it")
	fs.StringVar(&o.MaaSTierReviewSecret, "maas-tier-review-secret", convention.MaaSTierReviewSecret,
		"the Secret in Authorino's namespace whose key token is Authorino's bearer token for the tier lookup")
	fs.IntVar(&o.MaaSTierCacheTTL, "maas-tier-cache-ttl", convention.MaaSTierCacheTTL,
		"how long, in seconds, Authorino keeps a user's tier (0: not cached)")
	fs.BoolVar(&o.Auth, "enable-auth", false, "the gateways check every request with Kuadrant (docs/auth.md): each service's route "+
		"gets an AuthPolicy that lets through only callers who may get the service, and drops their Authorization header "+
		"before the model server; a service annotated "+convention.AnnotationEnableAuth+`="false" gets an anonymous one`)
	fs.StringSliceVar(&o.AuthAudiences, "auth-audiences", []string{convention.DefaultAuthAudience},
		"with --enable-auth: the audiences the services' TokenReview accepts bearer tokens for (comma-separated; docs/auth.md, \"Audiences\")")
	fs.VarPF(&invertedBool{dst: &o.WithoutNetworkPolicy}, "network-policy", "",
		"give each workload a NetworkPolicy: only the gateways' namespaces, the service's endpoint picker, --monitoring-namespaces "+
			"and the service's own pods reach its model servers (--network-policy=false: none, and any pod reaches them past the gateway's auth)").
		NoOptDefVal = "true"
	fs.StringSliceVar(&o.MonitoringNamespaces, "monitoring-namespaces", nil,
		"namespaces whose pods (Prometheus) may reach the model servers' ports through each workload's NetworkPolicy (comma-separated)")
	fs.StringSliceVar(&o.AllowedHostnames, "route-allowed-hostnames", nil,
		"hostnames a service's managed route may claim in spec.router.route.http.spec.hostnames (comma-separated; "+
			"\"*.example.com\" allows any name below example.com); default none: a route that claims one is refused")
	fs.StringToStringVar(&o.Images, "image", nil, "an image by key, KEY=REF (repeatable): overrides a key of presets/images.yaml "+
		"(vllm, routingSidecar, endpointPicker, inferenceSimulator, "+StorageInitializerImageKey+") or adds one for team presets")
	fs.Var(newParsed(&o.ImageRegistry, "", func(s string) (string, error) { return s, CheckImageRegistry(s) }), "image-registry",
		"a registry (host[:port][/path]) that replaces the registry of every image presets name by key and of the "+
			"storage initializer, for clusters that pull through a mirror")
	fs.StringVar(&o.Prometheus.URL, "prometheus-url", "",
		"the Prometheus (or Thanos querier) address the KEDA ScaledObjects of spec.scaling.wva.keda query for wva_desired_replicas")
	fs.StringVar(&o.Prometheus.AuthModes, "prometheus-auth-modes", "",
		"KEDA's authModes for that Prometheus (bearer, basic, tls, ...); the credentials and CA come from --prometheus-trigger-auth-name")
	fs.StringVar(&o.Prometheus.TriggerAuthName, "prometheus-trigger-auth-name", "",
		"the TriggerAuthentication (or ClusterTriggerAuthentication) those ScaledObjects authenticate to Prometheus with")
	fs.Var(newParsed(&o.Prometheus.TriggerAuthKind, "TriggerAuthentication", parseTriggerAuthKind), "prometheus-trigger-auth-kind",
		"its kind: TriggerAuthentication (in the service's namespace) or ClusterTriggerAuthentication")
	fs.StringArrayVar(&o.KEDAAllowedServerAddresses, "keda-allowed-server-address", nil,
		"an address (http(s)://host[:port][/path]) a service's own KEDA triggers may reach, besides --prometheus-url "+
			"(repeatable); a trigger's address must have its scheme and host and a path at or below its path")
	fs.BoolVar(&o.Prometheus.UnsafeSSL, "prometheus-unsafe-ssl", false,
		"do not verify Prometheus's certificate (KEDA's unsafeSsl); give a CA through the TriggerAuthentication instead")
}

// checkHostname checks an allowed hostname: a DNS name, or *. and one.
func checkHostname(h string) error {
	msgs := utilvalidation.IsDNS1123Subdomain(h)
	if strings.HasPrefix(h, "*.") {
		msgs = utilvalidation.IsWildcardDNS1123Subdomain(h)
	}
	if len(msgs) > 0 {
		return fmt.Errorf("hostname %q: %s", h, strings.Join(msgs, "; "))
	}
	return nil
}

// checkSet checks the option field, when it is set, with parse.
func checkSet[T ~string](field string, v T, parse func(string) (T, error)) error {
	if v == "" {
		return nil
	}
	if _, err := parse(string(v)); err != nil {
		return fmt.Errorf("field %s: %w", field, err)
	}
	return nil
}

// invertedBool is a boolean flag that sets the negation of its value.
type invertedBool struct{ dst *bool }

func (b *invertedBool) String() string {
	if b.dst == nil {
		return "true"
	}
	return strconv.FormatBool(!*b.dst)
}
func (b *invertedBool) Type() string { return "bool" }

func (b *invertedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.dst = !v
	return nil
}

func parseTriggerAuthKind(s string) (string, error) {
	switch s {
	case "TriggerAuthentication", "ClusterTriggerAuthentication":
		return s, nil
	}
	return "", fmt.Errorf("%q: want TriggerAuthentication or ClusterTriggerAuthentication", s)
}

// checkMaaSAPIServerURL checks the API server's address: an https URL
// with no path (the tierreviews path is added to it).
func checkMaaSAPIServerURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return fmt.Errorf("%q: want an https:// address with no path, e.g. %s", s, convention.MaaSAPIServerURL)
	}
	return nil
}

// checkPrometheus checks the Prometheus settings: an http(s) address, and
// authModes only with the authentication that carries the credentials.
func checkPrometheus(p build.Prometheus) error {
	var errs []error
	if p.URL != "" && !httpAddress(p.URL) {
		errs = append(errs, fmt.Errorf("URL %q: want an http:// or https:// address", p.URL))
	}
	if p.AuthModes != "" && p.TriggerAuthName == "" {
		errs = append(errs, fmt.Errorf("AuthModes %q: needs TriggerAuthName, the authentication that carries the credentials", p.AuthModes))
	}
	if p.TriggerAuthKind != "" {
		if _, err := parseTriggerAuthKind(p.TriggerAuthKind); err != nil {
			errs = append(errs, fmt.Errorf("TriggerAuthKind %w", err))
		}
	}
	return errors.Join(errs...)
}

// httpAddress reports whether s is an http:// or https:// address with a
// host.
func httpAddress(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// AddPhaseFlag registers --migration-phase for the commands that render
// without a cluster: the phase the routes and pools are rendered in.
func (o *Options) AddPhaseFlag(fs *pflag.FlagSet) {
	fs.Var(newParsed(&o.Phase, convention.PhaseV1, convention.ParsePhase), "migration-phase",
		"InferencePool migration phase: alpha2, dual, v1 or retired")
}

// AddPlatformFlags registers, for the commands that render without a
// cluster, what the controller otherwise learns from the cluster: what
// tells the gateway to originate TLS (--gateway-tls), whether to render
// the monitors (--monitoring) and whether KEDA's CRDs are installed
// (--keda).
func (o *Options) AddPlatformFlags(fs *pflag.FlagSet) {
	fs.Var(newParsed(&o.GatewayTLS, convention.GatewayTLSNone, convention.ParseGatewayTLS), "gateway-tls",
		"what tells the gateway to originate TLS to the backends: none, istio (DestinationRules) or "+
			"backend-tls-policy (Gateway API BackendTLSPolicies)")
	fs.StringVar(&o.IstioShadowService, "istio-shadow-service", "",
		"with --gateway-tls=istio: the Service Istio made for the pool (labelled istio.io/inferencepool-name), "+
			"for its DestinationRule; empty: none")
	fs.BoolVar(&o.Monitoring, "monitoring", false, "render Prometheus Operator monitors of the model servers and the endpoint picker")
	fs.VarPF(&invertedBool{dst: &o.WithoutKEDA}, "keda", "",
		"KEDA's CRDs are installed where the output goes: render the ScaledObjects spec.scaling asks for (--keda=false leaves them out)").
		NoOptDefVal = "true"
}

// parsed is a flag whose value is checked when it is set, so a bad value
// is reported with the flag's name.
type parsed[T ~string] struct {
	dst   *T
	parse func(string) (T, error)
}

func newParsed[T ~string](dst *T, def T, parse func(string) (T, error)) *parsed[T] {
	*dst = def
	return &parsed[T]{dst: dst, parse: parse}
}

func (p *parsed[T]) String() string { return string(*p.dst) }
func (p *parsed[T]) Type() string   { return "string" }

func (p *parsed[T]) Set(s string) error {
	v, err := p.parse(s)
	if err != nil {
		return err
	}
	*p.dst = v
	return nil
}
