package validation_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/api/validation"
)

// A service's own triggers reach only the addresses the platform allows,
// and never with the platform's authentication.
func TestTriggerPolicy(t *testing.T) {
	policy := validation.TriggerPolicy{
		PlatformAuth: "odh-serving-prometheus",
		Addresses:    []string{"https://thanos.monitoring.svc:9091", "http://metrics.team-tools.svc/api/"},
	}
	tests := map[string]struct {
		trigger string
		want    string // empty: allowed
	}{
		"the platform's Prometheus":      {trigger: `{type: prometheus, metadata: {serverAddress: "https://thanos.monitoring.svc:9091", query: up}, authenticationRef: {name: mine}}`},
		"a path below an allowed one":    {trigger: `{type: metrics-api, metadata: {url: "http://metrics.team-tools.svc/api/v1/queue"}}`},
		"the allowed path itself":        {trigger: `{type: metrics-api, metadata: {url: "http://metrics.team-tools.svc/api"}}`},
		"no address: KEDA's default":     {trigger: `{type: prometheus, metadata: {query: up}}`},
		"cpu makes no request":           {trigger: `{type: cpu, metadata: {value: "60"}, metricType: Utilization}`},
		"cron makes no request":          {trigger: `{type: cron, metadata: {timezone: UTC, start: "0 8 * * *", end: "0 18 * * *", desiredReplicas: "2"}}`},
		"another server":                 {trigger: `{type: prometheus, metadata: {serverAddress: "https://attacker.example.com", query: up}}`, want: `spec.scaling.keda.triggers[0].metadata.serverAddress: Forbidden: "https://attacker.example.com" is not an address`},
		"another port":                   {trigger: `{type: prometheus, metadata: {serverAddress: "https://thanos.monitoring.svc:9092", query: up}}`, want: "metadata.serverAddress: Forbidden"},
		"another scheme":                 {trigger: `{type: prometheus, metadata: {serverAddress: "http://thanos.monitoring.svc:9091", query: up}}`, want: "metadata.serverAddress: Forbidden"},
		"a host that extends an allowed": {trigger: `{type: prometheus, metadata: {serverAddress: "https://thanos.monitoring.svc:9091.attacker.com", query: up}}`, want: "metadata.serverAddress: Forbidden"},
		"user information":               {trigger: `{type: prometheus, metadata: {serverAddress: "https://x@thanos.monitoring.svc:9091", query: up}}`, want: "metadata.serverAddress: Forbidden"},
		"a path beside the allowed one":  {trigger: `{type: metrics-api, metadata: {url: "http://metrics.team-tools.svc/apix"}}`, want: "metadata.url: Forbidden"},
		"a path that climbs out":         {trigger: `{type: metrics-api, metadata: {url: "http://metrics.team-tools.svc/api/../admin"}}`, want: "metadata.url: Forbidden"},
		"an address from the env":        {trigger: `{type: prometheus, metadata: {serverAddressFromEnv: PROM, query: up}}`, want: "metadata[serverAddressFromEnv]: Forbidden"},
		"a type whose addresses are unknown": {
			trigger: `{type: kafka, metadata: {bootstrapServers: "attacker:9092", topic: t}}`,
			want:    `spec.scaling.keda.triggers[0].type: Unsupported value: "kafka"`,
		},
		"an external scaler": {trigger: `{type: external, metadata: {scalerAddress: "attacker:6000"}}`, want: `triggers[0].type: Unsupported value: "external"`},
		"the platform's authentication": {
			trigger: `{type: prometheus, metadata: {serverAddress: "https://thanos.monitoring.svc:9091", query: up}, authenticationRef: {name: odh-serving-prometheus}}`,
			want:    `spec.scaling.keda.triggers[0].authenticationRef.name: Forbidden: "odh-serving-prometheus" is the platform's own authentication`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var spec v1alpha2.LLMInferenceServiceSpec
			if err := yaml.UnmarshalStrict([]byte("scaling: {maxReplicas: 2, keda: {triggers: ["+tc.trigger+"]}}"), &spec); err != nil {
				t.Fatal(err)
			}
			errs := validation.ValidateTriggers(&spec, policy)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs.ToAggregate())
			case tc.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want)):
				t.Errorf("errors %v, want one containing %q", errs.ToAggregate(), tc.want)
			}
		})
	}
}

// The prefill workload's triggers are checked too, and with no policy no
// address is allowed.
func TestTriggerPolicyPrefillAndZero(t *testing.T) {
	var spec v1alpha2.LLMInferenceServiceSpec
	err := yaml.UnmarshalStrict([]byte(`prefill:
  scaling: {maxReplicas: 2, keda: {triggers: [{type: prometheus, metadata: {serverAddress: "https://thanos.monitoring.svc:9091", query: up}}]}}`), &spec)
	if err != nil {
		t.Fatal(err)
	}
	errs := validation.ValidateTriggers(&spec, validation.TriggerPolicy{})
	if want := "spec.prefill.scaling.keda.triggers[0].metadata.serverAddress: Forbidden"; len(errs) != 1 || !strings.Contains(errs[0].Error(), want) {
		t.Errorf("errors %v, want one containing %q", errs.ToAggregate(), want)
	}
}

// A ClusterTriggerAuthentication is refused whatever the platform
// configures: the webhook and render refuse it as they check the service.
func TestClusterTriggerAuthenticationRefused(t *testing.T) {
	svc := &v1alpha2.LLMInferenceService{}
	err := yaml.UnmarshalStrict([]byte(`spec:
  scaling: {maxReplicas: 2, keda: {triggers: [{type: cpu, metadata: {value: "60"}, authenticationRef: {name: any, kind: ClusterTriggerAuthentication}}]}}`), svc)
	if err != nil {
		t.Fatal(err)
	}
	errs := validation.ValidateService(svc)
	if want := "spec.scaling.keda.triggers[0].authenticationRef.kind: Forbidden: a service's own triggers may use only a TriggerAuthentication"; len(errs) != 1 || !strings.Contains(errs[0].Error(), want) {
		t.Errorf("errors %v, want one containing %q", errs.ToAggregate(), want)
	}
}
