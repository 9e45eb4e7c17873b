package cli_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

func TestPostRenderStaticMarksRouteWeights(t *testing.T) {
	docs := documents(t, string(pdStream(t, 2)), "post-render", "--mode", "static")
	routes := 0
	for _, d := range docs {
		marked := d.Object.GetAnnotations()[convention.AnnotationWeightsManagedBy] == "controller"
		isRoute := d.Object.GetKind() == "HTTPRoute"
		if isRoute {
			routes++
		}
		if marked != isRoute {
			t.Errorf("%s %s: annotation %s present %v; want it on HTTPRoutes only", d.Object.GetKind(), d.Object.GetName(), convention.AnnotationWeightsManagedBy, marked)
		}
	}
	if routes != 2 {
		t.Errorf("%d HTTPRoutes, want one per service", routes)
	}
}

func TestPostRenderIsDeterministic(t *testing.T) {
	stream := string(pdStream(t, 10))
	_, first, _ := run(t, stream, "post-render", "--mode", "static", "--overlay", "openshift")
	for range 3 {
		if _, again, stderr := run(t, stream, "post-render", "--mode", "static", "--overlay", "openshift"); again != first || first == "" {
			t.Fatalf("two runs differ (stderr %q)", stderr)
		}
	}
}

func TestPostRenderOverlay(t *testing.T) {
	stream := "apiVersion: v1\nkind: Service\nmetadata: {name: odh-serving-webhook, namespace: ns}\nspec: {ports: [{port: 443}]}\n"
	out, _ := succeeds(t, stream, "post-render", "--overlay", "openshift", "--overlay", "odh")
	for _, want := range []string{"serving-cert-secret-name: odh-serving-webhook-cert", "name: llmisvc-webhook-server-service", "namespace: opendatahub"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q: both overlays apply, in order:\n%s", want, out)
		}
	}
}

func TestPostRenderErrorsWriteNothing(t *testing.T) {
	svc := string(pdStream(t, 1))
	tests := map[string]struct {
		stdin string
		args  []string
		want  string
	}{
		"unknown overlay": {stdin: svc, args: []string{"--overlay", "nope"}, want: `overlay "nope": neither a built-in overlay`},
		"overlay fails": {
			stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", args: []string{"--overlay", "kubernetes"},
			want: "overlay kubernetes: ", // its replacements need the controller's Deployment
		},
		"overlay fails after a static render": {stdin: svc, args: []string{"--mode", "static", "--overlay", "kubernetes"}, want: "nothing selected by Deployment"},
		"bad service in static mode": {
			stdin: "apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: s, namespace: team}\nspec: {model: {uri: ftp://x}}\n",
			args:  []string{"--mode", "static"}, want: "<stdin>:1: render LLMInferenceService team/s",
		},
		"bad stream in static mode": {stdin: "kind: [", args: []string{"--mode", "static"}, want: "<stdin>:1:"},
		"unknown mode":              {stdin: svc, args: []string{"--mode", "dynamic"}, want: `unknown mode "dynamic"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			failsQuietly(t, tc.stdin, tc.want, append([]string{"post-render"}, tc.args...)...)
		})
	}
}

// failsQuietly runs the command line and wants a non-zero exit, want in
// the error and nothing at all on stdout.
func failsQuietly(t *testing.T, stdin, want string, args ...string) {
	t.Helper()
	code, out, stderr := run(t, stdin, args...)
	if code == 0 {
		t.Fatal("exit 0; want an error")
	}
	if out != "" {
		t.Errorf("stdout must be empty on error, got %d bytes", len(out))
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %q\nwant %q", stderr, want)
	}
}

// Regression: a separator line with a comment ("--- # ...") once dropped
// the document after it; CRLF, a byte order mark, "..." and a List must
// not lose one either. Every object of the stream is in the output, and the
// service in the List is expanded.
func TestPostRenderStaticKeepsEveryDocument(t *testing.T) {
	stream := "\ufeff--- # Source: chart/templates/a.yaml\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata: {name: first}\r\n" +
		"--- # Source: chart/templates/b.yaml\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata: {name: second}\r\n...\r\n" +
		"---\r\napiVersion: v1\r\nkind: List\r\nitems:\r\n" +
		"- apiVersion: serving.kserve.io/v1alpha2\r\n  kind: LLMInferenceService\r\n  metadata: {name: listed}\r\n" +
		"  spec: {baseRefs: [{name: kserve-config-llm-cpu-simulator}]}\r\n" +
		"- apiVersion: v1\r\n  kind: ConfigMap\r\n  metadata: {name: third}\r\n" +
		"--- # the last one\r\n{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"fourth\"}}\r\n"
	docs := documents(t, stream, "post-render", "--mode", "static", "-n", "ns")
	seen := map[string]bool{}
	for _, d := range docs {
		seen[d.Object.GetKind()+" "+d.Object.GetName()] = true
	}
	for _, want := range []string{
		"ConfigMap first", "ConfigMap second", "ConfigMap third", "ConfigMap fourth",
		"LLMInferenceService listed", "Deployment listed-kserve",
	} {
		if !seen[want] {
			t.Errorf("the output lacks %s; it holds %v", want, seen)
		}
	}
}

// Static mode renders the actuators of spec.scaling beside the workloads and
// leaves the scaled workloads' replicas out, so a helm upgrade does not reset
// what the autoscaler chose; it labels them with the autoscaler's minimum,
// for the chart's replicas webhook. --keda=false leaves the ScaledObjects
// out.
func TestPostRenderStaticScaling(t *testing.T) {
	const stream = `apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata:
  name: chat
  namespace: team-a
spec:
  model: {uri: hf://Qwen/Qwen2.5-7B-Instruct}
  scaling: {minReplicas: 3, maxReplicas: 4, wva: {hpa: {}}}
  template:
    containers: [{name: main}]
  prefill:
    scaling:
      maxReplicas: 2
      wva: {hpa: {}}
    template:
      containers: [{name: main}]
  router: {route: {}, gateway: {}, scheduler: {}}
`
	docs := documents(t, stream, "post-render", "--mode", "static")
	hpas, floors := map[string]string{}, map[string]string{}
	for _, d := range docs {
		switch d.Object.GetKind() {
		case "HorizontalPodAutoscaler":
			target, _, _ := unstructured.NestedString(d.Object.Object, "spec", "scaleTargetRef", "name")
			hpas[d.Object.GetName()] = target
		case "Deployment":
			_, scaled, _ := unstructured.NestedFieldNoCopy(d.Object.Object, "spec", "replicas")
			if strings.HasSuffix(d.Object.GetName(), "router-scheduler") != scaled {
				t.Errorf("Deployment %s: has replicas %v; only the unscaled endpoint picker should", d.Object.GetName(), scaled)
			}
			if floor, ok := d.Object.GetLabels()[convention.LabelMinReplicas]; ok {
				floors[d.Object.GetName()] = floor
			}
		}
	}
	if want := map[string]string{"chat-kserve": "3", "chat-kserve-prefill": "1"}; !maps.Equal(floors, want) {
		t.Errorf("Deployments labelled %s: %v, want %v (the HPAs' minReplicas)", convention.LabelMinReplicas, floors, want)
	}
	want := map[string]string{"chat-kserve-hpa": "chat-kserve", "chat-kserve-prefill-hpa": "chat-kserve-prefill"}
	if len(hpas) != len(want) || hpas["chat-kserve-hpa"] != want["chat-kserve-hpa"] || hpas["chat-kserve-prefill-hpa"] != want["chat-kserve-prefill-hpa"] {
		t.Errorf("HPAs (name: target) = %v, want %v", hpas, want)
	}

	keda := strings.ReplaceAll(stream, "{hpa: {}}", "{keda: {}}")
	for _, tc := range []struct {
		args []string
		want int
	}{{[]string{"--prometheus-url", "https://prometheus:9090"}, 2}, {[]string{"--prometheus-url", "https://prometheus:9090", "--keda=false"}, 0}} {
		out, _ := succeeds(t, keda, append([]string{"post-render", "--mode", "static"}, tc.args...)...)
		if got := strings.Count(out, "kind: ScaledObject"); got != tc.want {
			t.Errorf("%v: %d ScaledObjects, want %d", tc.args, got, tc.want)
		}
	}
}

// Static mode with auth on fails closed: Helm applies the routes, so the
// render writes a route only with an AuthPolicy that covers it in the
// same stream. Every service's route brings its own (the protected
// service's, which names it; the anonymous one of a service opened with
// the annotation), whether or not the chart's gateway policy is there;
// either way the output holds an AuthPolicy beside the route, which Helm
// cannot map while Kuadrant's CRDs are missing
// (TestIntegrationHelmStaticAuthWithoutKuadrant). A route without its
// policy is refused (offline.TestCheckGuarded).
func TestPostRenderStaticAuthFailsClosed(t *testing.T) {
	svc := "apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: chat, namespace: team%s}\n" +
		"spec: {baseRefs: [{name: kserve-config-llm-cpu-simulator}], router: {route: {}, gateway: {}, scheduler: {}}}\n"
	protected := fmt.Sprintf(svc, "")
	opened := fmt.Sprintf(svc, `, annotations: {security.opendatahub.io/enable-auth: "false"}`)
	gatewayPolicy := "---\napiVersion: kuadrant.io/v1\nkind: AuthPolicy\nmetadata: {name: kserve-ingress-gateway-authn, namespace: opendatahub}\n" +
		"spec: {targetRef: {group: gateway.networking.k8s.io, kind: Gateway, name: kserve-ingress-gateway}, rules: {}}\n"
	args := []string{"post-render", "--mode", "static", "--enable-auth"}

	for name, c := range map[string]struct {
		stream    string
		anonymous bool
	}{
		"protected, no gateway policy":    {stream: protected},
		"protected, the gateway's policy": {stream: protected + gatewayPolicy},
		"the service opened":              {stream: opened, anonymous: true},
	} {
		kinds := map[string]int{}
		var policy *unstructured.Unstructured
		for _, d := range documents(t, c.stream, args...) {
			kinds[d.Object.GetKind()]++
			if d.Object.GetKind() == "AuthPolicy" && d.Object.GetName() == "chat-kserve-route-authn" {
				policy = d.Object
			}
		}
		if kinds["HTTPRoute"] != 1 || policy == nil {
			t.Errorf("%s: %d HTTPRoute and AuthPolicy chat-kserve-route-authn %v in the output (kinds %v), want the route and its policy", name, kinds["HTTPRoute"], policy != nil, kinds)
			continue
		}
		_, anonymous, _ := unstructured.NestedMap(policy.Object, "spec", "rules", "authentication", "public", "anonymous")
		if anonymous != c.anonymous {
			t.Errorf("%s: the route's AuthPolicy anonymous %t, want %t", name, anonymous, c.anonymous)
		}
	}
	// Auth off: nothing to guard.
	if kinds := documents(t, protected, "post-render", "--mode", "static"); len(kinds) == 0 {
		t.Error("auth off: no output")
	}
}
