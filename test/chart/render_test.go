package chart

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
	"github.com/opendatahub-io/odh-serving/presets"
)

func TestLint(t *testing.T) {
	for _, chart := range []string{chartDir, crdsChartDir} {
		values := ciValues(t, chart)
		for _, name := range slices.Sorted(maps.Keys(values)) {
			t.Run(filepath.Base(chart)+"/"+name, func(t *testing.T) {
				out := helm.Must(t, "lint", "--strict", chart, "-f", values[name])
				if !strings.Contains(out, "0 chart(s) failed") {
					t.Errorf("helm lint:\n%s", out)
				}
			})
		}
	}
}

// TestTemplateGolden keeps the whole output of odh-serving for each ci
// values file, and a summary of odh-serving-crds (the CRDs themselves are
// copies of api/crds, checked by make verify).
func TestTemplateGolden(t *testing.T) {
	values := ciValues(t, chartDir)
	for _, name := range slices.Sorted(maps.Keys(values)) {
		t.Run("odh-serving/"+name, func(t *testing.T) {
			out := template(t, templateArgs(chartDir, values[name])...)
			golden.Assert(t, filepath.Join("testdata", "odh-serving", name+".yaml"), []byte(out))
		})
	}
	values = ciValues(t, crdsChartDir)
	for _, name := range slices.Sorted(maps.Keys(values)) {
		t.Run("odh-serving-crds/"+name, func(t *testing.T) {
			_, objs := render(t, templateArgs(crdsChartDir, values[name])...)
			golden.Assert(t, filepath.Join("testdata", "odh-serving-crds", name+".yaml"), crdSummary(t, objs))
		})
	}
}

// crdSummary lists each CRD with what the chart adds to it.
func crdSummary(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	summary := make([]map[string]any, 0, len(objs))
	for _, o := range objs {
		entry := map[string]any{"kind": o.GetKind(), "name": o.GetName(), "annotations": o.GetAnnotations()}
		if conv, ok, _ := unstructured.NestedMap(o.Object, "spec", "conversion"); ok {
			entry["conversion"] = conv
		}
		summary = append(summary, entry)
	}
	out, err := yaml.Marshal(summary)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeterministic renders each ci values file twice (the render the
// other tests share, and one of its own): Argo CD renders on every sync
// and must see the same bytes.
func TestDeterministic(t *testing.T) {
	for _, chart := range []string{chartDir, crdsChartDir} {
		values := ciValues(t, chart)
		for _, name := range slices.Sorted(maps.Keys(values)) {
			t.Run(filepath.Base(chart)+"/"+name, func(t *testing.T) {
				first := template(t, templateArgs(chart, values[name])...)
				second := helm.Must(t, templateArgs(chart, values[name])...)
				if first != second {
					t.Errorf("two renders differ:\n%s", cmp.Diff(first, second))
				}
			})
		}
	}
}

// forbidden are template functions and objects whose result depends on the
// cluster, the clock or chance: under Argo CD (helm template on every sync)
// they give nothing or a new value each time.
var forbidden = regexp.MustCompile(`\b(lookup|rand[A-Za-z]*|uuidv4|genCA[A-Za-z]*|genPrivateKey|genSelfSignedCert[A-Za-z]*|genSignedCert[A-Za-z]*|now|date[A-Za-z]*|htmlDate[A-Za-z]*|unixEpoch|ago|toDate|mustToDate|getHostByName|Capabilities)\b`)

var (
	action   = regexp.MustCompile(`(?s)\{\{(.*?)\}\}`)
	comment  = regexp.MustCompile(`(?s)^-?\s*/\*.*\*/\s*-?$`)
	literals = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`")
)

// TestTemplatesUseOnlyValues scans every template action of both charts for
// forbidden functions, and every template for hooks other than helm test.
func TestTemplatesUseOnlyValues(t *testing.T) {
	var files []string
	for _, chart := range []string{chartDir, crdsChartDir} {
		found := golden.Glob(t, filepath.Join(chart, "templates", "*"))
		files = append(files, found...)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d template files", len(files))
	}
	hook := regexp.MustCompile(`helm\.sh/hook:\s*(\S+)|argocd\.argoproj\.io/hook`)
	for _, file := range files {
		data := golden.Read(t, file)
		for _, m := range action.FindAllStringSubmatch(string(data), -1) {
			code := m[1]
			if comment.MatchString(code) {
				continue
			}
			if f := forbidden.FindString(literals.ReplaceAllString(code, `""`)); f != "" {
				t.Errorf("%s: %q uses %s", file, m[0], f)
			}
		}
		for _, m := range hook.FindAllStringSubmatch(string(data), -1) {
			if m[1] != "test" {
				t.Errorf("%s: hook %q; only helm test hooks are allowed (Argo CD maps hooks to sync phases)", file, m[0])
			}
		}
	}
}

// TestOnlyTestHooks checks the rendered output too: every hook is a helm
// test.
func TestOnlyTestHooks(t *testing.T) {
	values := ciValues(t, chartDir)
	for _, name := range slices.Sorted(maps.Keys(values)) {
		_, objs := render(t, templateArgs(chartDir, values[name])...)
		hooks := 0
		for _, o := range objs {
			if h, ok := o.GetAnnotations()["helm.sh/hook"]; ok {
				hooks++
				if h != "test" || o.GetKind() != "Pod" {
					t.Errorf("%s: %s %s has hook %q, want only the helm test Pod", name, o.GetKind(), o.GetName(), h)
				}
			}
		}
		if hooks != 1 {
			t.Errorf("%s: %d hooks, want the one helm test Pod", name, hooks)
		}
	}
}

func TestSchemaRejectsTypos(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"controler.replicas=2", "additional properties 'controler' not allowed"},
		{"controller.replicas=two", "at '/controller/replicas': got string, want integer"},
		{"services.chat.spec=oops", "at '/services/chat/spec': got string, want object"},
		{"services.chat.sepc.replicas=1", "additional properties 'sepc' not allowed"},
		{"presets.config-llm-templat.enabled=false", "additional properties 'config-llm-templat' not allowed"},
		{"certMode=selfsigned", "at '/certMode': value must be one of 'self-signed', 'cert-manager', 'service-ca'"},
		{"gateways.internal.tls.sorce=x", "additional properties 'sorce' not allowed"},
		{"webhook.failurePolicy=fail", "at '/webhook/failurePolicy': value must be one of 'Fail', 'Ignore'"},
		{"images.vlm=x", "additional properties 'vlm' not allowed"},
		{"imageRegistry=https://mirror.example.com", "at '/imageRegistry': 'https://mirror.example.com' does not match pattern"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			for _, cmd := range [][]string{templateArgs(chartDir, "", "--set", tc.set), {"lint", chartDir, "--set", tc.set}} {
				out, err := helm.Run(t.Context(), cmd...)
				if err == nil || !strings.Contains(out+err.Error(), tc.want) {
					t.Errorf("helm %s: got %v\n%s\nwant an error containing %q", cmd[0], err, out, tc.want)
				}
			}
		})
	}
}

// TestTemplateErrors covers what the schema cannot express.
func TestTemplateErrors(t *testing.T) {
	_, err := helm.Run(t.Context(), templateArgs(chartDir, "", "--set", "extraImages.vllm=x")...)
	if want := "extraImages.vllm: vllm is a shipped image key; set images.vllm instead"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an error containing %q", err, want)
	}
}

// TestValuesDocumented checks that every key of values.yaml that the schema
// defines has a comment above it, and that every key the schema defines has
// a default in values.yaml.
func TestValuesDocumented(t *testing.T) {
	data := golden.Read(t, filepath.Join(chartDir, "values.yaml"))
	var schema map[string]any
	raw := golden.Read(t, filepath.Join(chartDir, "values.schema.json"))
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	checked := checkDocumented(t, data, schema)
	if checked < 80 {
		t.Errorf("checked only %d keys", checked)
	}
}

// TestWebhookMatchesController compares the chart's webhook configuration
// with the one internal/webhook builds for the control plane: same name,
// webhook, rules and policies. The chart adds an object selector for its
// shipped presets, and the port the Service listens on.
func TestWebhookMatchesController(t *testing.T) {
	_, objs := render(t, templateArgs(chartDir, "")...)
	u := one(t, objs, "ValidatingWebhookConfiguration", webhook.ValidatingConfigurationName)
	got := &admissionv1.ValidatingWebhookConfiguration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, got); err != nil {
		t.Fatal(err)
	}
	want := webhook.ValidatingConfiguration("opendatahub", "odh-serving-webhook", nil)
	want.Webhooks[0].ClientConfig.Service.Port = ptr.To[int32](443)
	want.Webhooks[0].ObjectSelector = got.Webhooks[0].ObjectSelector
	if got.Webhooks[0].ObjectSelector == nil || len(got.Webhooks[0].ObjectSelector.MatchExpressions) != 1 ||
		got.Webhooks[0].ObjectSelector.MatchExpressions[0].Key != "odh-serving.opendatahub.io/shipped-preset" {
		t.Errorf("object selector %v, want one that skips shipped presets", got.Webhooks[0].ObjectSelector)
	}
	if got.Name != want.Name {
		t.Errorf("name %q, want %q", got.Name, want.Name)
	}
	if diff := cmp.Diff(want.Webhooks, got.Webhooks); diff != "" {
		t.Errorf("webhooks differ from internal/webhook (-want +got):\n%s", diff)
	}
}

// TestPresetsMatchShipped decodes the chart's presets and compares them
// with the embedded ones: the chart ships presets/ unchanged, with the
// prefix, in the system namespace.
func TestPresetsMatchShipped(t *testing.T) {
	out, _ := render(t, templateArgs(chartDir, "", "--set", "presetPrefix=team-")...)
	in, err := manifest.Decode("helm-output", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := presets.Load("opendatahub", "team-")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range in.Presets {
		got[p.Namespace+"/"+p.Name] = golden.JSON(t, p.Spec)
	}
	if len(got) != len(shipped) {
		t.Errorf("%d presets in the chart, %d shipped", len(got), len(shipped))
	}
	for _, p := range shipped {
		key := p.Namespace + "/" + p.Name
		if spec, ok := got[key]; !ok {
			t.Errorf("preset %s is not in the chart", key)
		} else if diff := cmp.Diff(golden.JSON(t, p.Spec), spec); diff != "" {
			t.Errorf("preset %s differs from presets/ (-shipped +chart):\n%s", key, diff)
		}
	}
}

// TestControllerFlags checks the flags the values turn into.
func TestControllerFlags(t *testing.T) {
	for _, tc := range []struct {
		values  string
		want    []string
		notWant []string
	}{
		{"default", []string{"--system-namespace=opendatahub", "--cert-mode=self-signed", "--leader-elect", "--manage-crds=true",
			"--webhook-service-name=odh-serving-webhook", "--ingress-gateway-name=kserve-ingress-gateway", "--preset-prefix=kserve-"},
			[]string{"--image=", "--static-mode", "--internal-gateway-name=kserve-internal-gateway", "--watch-namespaces=", "--maas", "--tier-", "--maas-gateway-", "--keda-allowed-server-address"}},
		{"cert-manager", []string{"--cert-mode=cert-manager", "--cert-issuer-kind=ClusterIssuer", "--cert-issuer-name=odh-serving-ca"}, nil},
		{"service-ca", []string{"--cert-mode=service-ca", "--internal-gateway-name=kserve-internal-gateway", "--internal-gateway-namespace=opendatahub"}, nil},
		{"services", []string{"--watch-namespaces=team-a"}, nil},
		{"internal-gateway", []string{"--keda-allowed-server-address=http://metrics.team-a.svc:8080/api"}, nil},
		{"static", []string{"--static-mode", "--manage-crds=false"}, nil},
		{"maas", []string{"--maas", "--tier-config-namespace=opendatahub", "--tier-config-name=tier-to-group-mapping",
			"--tier-namespace-prefix=maas-default-gateway-tier-", "--maas-gateway-name=maas-default-gateway", "--maas-gateway-namespace=openshift-ingress"}, nil},
		{"presets-off", []string{"--image=vllm=mirror.example.com/vllm/vllm-openai:v0.11.0",
			"--image=endpointPicker=mirror.example.com/llm-d/llm-d-router-endpoint-picker:v0.9.0", "--image=vllmRocm=mirror.example.com/rocm/vllm:v0.11.0"},
			[]string{"--image=routingSidecar", "--image=inferenceSimulator"}},
	} {
		t.Run(tc.values, func(t *testing.T) {
			_, objs := render(t, templateArgs(chartDir, ciValues(t, chartDir)[tc.values])...)
			deploy := one(t, objs, "Deployment", "odh-serving-controller")
			containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			if len(args) == 0 || args[0] != "controller" {
				t.Fatalf("args %v, want the controller command first", args)
			}
			for _, w := range tc.want {
				if !slices.Contains(args, w) {
					t.Errorf("no %s in %v", w, args)
				}
			}
			for _, nw := range tc.notWant {
				for _, a := range args {
					if strings.HasPrefix(a, nw) {
						t.Errorf("unexpected %s in %v", a, args)
					}
				}
			}
		})
	}
}
