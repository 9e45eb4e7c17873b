package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
)

// A tenant who may create services in their own namespace must not get,
// through one, a binding or a credential they could not get themselves
// (docs/security.md, "What a tenant can make the controller do").

// tenantService is a service on the CPU simulator with the given
// spec.router.scheduler (in YAML's flow style); spec is added under spec:
// (indented by two spaces).
func tenantService(namespace, name, scheduler, spec string) string {
	return fmt.Sprintf(`apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: %s, namespace: %s}
spec:
  model: {name: m}
  baseRefs: [{name: kserve-config-llm-cpu-simulator}]
  router: {route: {}, gateway: {}, scheduler: %s}
%s`, name, namespace, scheduler, spec)
}

// platformPrometheus is a platform whose wva.keda ScaledObjects query its
// Prometheus with its own ClusterTriggerAuthentication.
var platformPrometheus = build.Prometheus{
	URL: "https://thanos-querier.openshift-monitoring.svc:9091", AuthModes: "bearer",
	TriggerAuthName: "odh-serving-prometheus", TriggerAuthKind: "ClusterTriggerAuthentication",
}

// renderTenant renders every service of a stream with opts, and returns the
// objects of each as YAML documents, or the first error.
func renderTenant(t *testing.T, stream string, opts engine.Options) ([]string, error) {
	t.Helper()
	in, err := manifest.Decode("tenant.yaml", []byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	opts.Images = presetstest.Images(t)
	var docs []string
	for _, s := range in.Services {
		res, err := engine.Render(t.Context(), s.Service, presetstest.Catalog(t, in.Presets), opts)
		if err != nil {
			return docs, err
		}
		objs, err := res.Unstructured()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			data, err := yaml.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(data))
		}
	}
	return docs, nil
}

// Each attack must be refused, with an error that names the field. The
// test prints what the engine rendered when it was not.
func TestTenantCannotEscalateThroughAService(t *testing.T) {
	keda := func(trigger string) string {
		return "  scaling:\n    maxReplicas: 2\n    keda:\n      triggers:\n" + trigger
	}
	cases := []struct {
		name   string
		stream string
		opts   engine.Options
		// field is what the error must name; shows is what the rendered
		// objects hold when the attack works.
		field, shows string
	}{{
		name:   "the endpoint picker as the namespace's default ServiceAccount",
		stream: tenantService("team-a", "qwen", "{template: {serviceAccountName: default}}", ""),
		field:  "spec.router.scheduler.template.serviceAccountName",
		shows:  "kind: ClusterRoleBinding",
	}, {
		name:   "the endpoint picker as another ServiceAccount, by the deprecated field",
		stream: tenantService("team-a", "qwen", "{template: {serviceAccount: builder}}", ""),
		field:  "spec.router.scheduler.template.serviceAccount",
		shows:  "serviceAccount: builder",
	}, {
		name: "a trigger with the platform's ClusterTriggerAuthentication",
		stream: tenantService("team-a", "qwen", "{}", keda(`      - type: prometheus
        metadata: {serverAddress: "https://thanos-querier.openshift-monitoring.svc:9091", query: up, threshold: "1", authModes: bearer}
        authenticationRef: {name: odh-serving-prometheus, kind: ClusterTriggerAuthentication}
`)),
		opts:  engine.Options{Prometheus: platformPrometheus},
		field: "spec.scaling.keda.triggers[0].authenticationRef.kind",
		shows: "kind: ClusterTriggerAuthentication",
	}, {
		name: "a trigger with the platform's TriggerAuthentication",
		stream: tenantService("team-a", "qwen", "{}", keda(`      - type: prometheus
        metadata: {serverAddress: "https://thanos-querier.openshift-monitoring.svc:9091", query: up, threshold: "1", authModes: bearer}
        authenticationRef: {name: odh-serving-prometheus}
`)),
		opts: engine.Options{Prometheus: build.Prometheus{URL: platformPrometheus.URL, AuthModes: "bearer",
			TriggerAuthName: "odh-serving-prometheus", TriggerAuthKind: "TriggerAuthentication"}},
		field: "spec.scaling.keda.triggers[0].authenticationRef.name",
		shows: "name: odh-serving-prometheus",
	}, {
		name: "a trigger that sends credentials to the tenant's server",
		stream: tenantService("team-a", "qwen", "{}", keda(`      - type: prometheus
        metadata: {serverAddress: "https://attacker.example.com", query: up, threshold: "1", authModes: bearer}
        authenticationRef: {name: my-auth}
`)),
		opts:  engine.Options{Prometheus: platformPrometheus},
		field: "spec.scaling.keda.triggers[0].metadata.serverAddress",
		shows: "serverAddress: https://attacker.example.com",
	}, {
		name: "a metrics-api trigger that reaches the cloud's metadata server",
		stream: tenantService("team-a", "qwen", "{}", keda(`      - type: metrics-api
        metadata: {url: "http://169.254.169.254/latest/meta-data", valueLocation: x, targetValue: "1"}
`)),
		opts:  engine.Options{Prometheus: platformPrometheus},
		field: "spec.scaling.keda.triggers[0].metadata.url",
		shows: "url: http://169.254.169.254",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			docs, err := renderTenant(t, c.stream, c.opts)
			if err == nil {
				for _, d := range docs {
					if strings.Contains(d, c.shows) {
						t.Logf("rendered:\n%s", d)
					}
				}
				t.Fatalf("rendered; want an error naming %s", c.field)
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Errorf("error %q does not name %s", err, c.field)
			}
		})
	}
}

// Two services whose namespace and name join to the same string get
// different cluster-wide bindings: a/b-c and a-b/c.
func TestClusterBindingNamesDoNotCollide(t *testing.T) {
	stream := tenantService("a", "b-c", "{}", "") + "---\n" + tenantService("a-b", "c", "{}", "")
	docs, err := renderTenant(t, stream, engine.Options{Monitoring: true})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	bindings := 0
	for _, d := range docs {
		if !strings.HasPrefix(d, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding") {
			continue
		}
		bindings++
		var b struct {
			Metadata struct{ Name string }
			Subjects []struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal([]byte(d), &b); err != nil {
			t.Fatal(err)
		}
		subject := b.Subjects[0].Namespace + "/" + b.Subjects[0].Name
		if prev, ok := owner[b.Metadata.Name]; ok {
			t.Errorf("ClusterRoleBinding %s binds both %s and %s", b.Metadata.Name, prev, subject)
		}
		owner[b.Metadata.Name] = subject
	}
	if bindings != 4 {
		t.Fatalf("rendered %d ClusterRoleBindings, want 4 (the endpoint picker's and the metrics reader's of each)", bindings)
	}
}
