package badinput

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha1"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// kserveExtensions is a KServe-style v1alpha1 service that uses every field
// KServe added beyond the model, the workloads and the router, LoRA adapters
// as whole model specs, and KServe's status.
const kserveExtensions = "../../api/v1alpha1/testdata/kserve-extensions.yaml"

// unimplementedFields are the fields of kserveExtensions that are accepted
// and not acted on: each must be named by a warning.
var unimplementedFields = []string{"spec.runtime", "spec.router.route.group", "spec.router.scheduler.tokenizer",
	"spec.model.lora.adapters[0].confidential", "spec.model.lora.adapters[1].lora"}

// TestKServeExtensionsAccepted sends the KServe-style service, as v1alpha1
// and as v1alpha2 (its conversion: v1alpha1's criticalities in
// annotations), through every strict path: render must render it (the
// speculator, KV cache, tracing, rollout and adapters in the children) and
// warn about each field it does not act on; the webhook's handler must
// admit it with the same warnings; the real API server must create it with
// strict field validation (no unknown or dropped field, KServe's status
// included), pass the warnings on, and give back every field as written in
// both versions; and KServe's status written through the status
// subresource must read back the same in both versions.
func TestKServeExtensionsAccepted(t *testing.T) {
	data := golden.Read(t, kserveExtensions)
	docs := map[string]map[string]any{}
	for _, version := range []string{"v1alpha1", "v1alpha2"} {
		obj := map[string]any{}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		if version == "v1alpha2" {
			if err := v1alpha1.ToHub(obj); err != nil {
				t.Fatal(err)
			}
		}
		docs[version] = obj
	}
	ns := testenv.NewNamespace(t, cp.Client, namespacePrefix)
	for _, version := range []string{"v1alpha1", "v1alpha2"} {
		t.Run(version, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(docs[version])}
			doc, err := yaml.Marshal(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			file := t.TempDir() + "/service.yaml"
			if err := os.WriteFile(file, doc, 0o600); err != nil {
				t.Fatal(err)
			}
			obj.SetName("qwen-" + version)
			obj.SetNamespace(ns)

			code, stdout, stderr := runCLI([]string{"render", "-f", file, "-n", ns}, nil)
			if code != 0 {
				t.Fatalf("render exited %d:\n%s", code, stderr)
			}
			for _, want := range []string{"--speculative-config", "speculator-initializer", "--kv-transfer-config",
				"TieringOffloadingSpec", "kv-cache-secondary-2", "--otlp-traces-endpoint", "--tracing=true", "OTEL_SERVICE_NAME",
				"maxSurge: 25%", "--trust-remote-code", `{"apiVersion":"inference.networking.x-k8s.io/v1alpha1","kind":"EndpointPickerConfig","plugins":[{"type":"queue-scorer"}]}`,
				"/mnt/lora/sql", "lora-pvc-chat", "--max-lora-rank=16"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("render: the children lack %q", want)
				}
			}
			checkWarned(t, "render", stderr)

			raw, err := obj.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			resp := webhook.Validator{}.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create,
				Kind:      metav1.GroupVersionKind{Group: "serving.kserve.io", Version: version, Kind: "LLMInferenceService"},
				Name:      obj.GetName(), Namespace: ns, Object: runtime.RawExtension{Raw: raw},
			}})
			if !resp.Allowed {
				t.Fatalf("the webhook refused it: %v", resp.Result)
			}
			checkWarned(t, "webhook", strings.Join(resp.Warnings, "\n"))

			warnings := &warningRecorder{}
			cfg := rest.CopyConfig(cp.Config)
			cfg.WarningHandler = warnings
			c, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			created := obj.DeepCopy()
			if err := c.Create(t.Context(), created, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("the API server refused it with strict field validation: %v", err)
			}
			checkWarned(t, "API server", warnings.String())
			// KServe's status through the status subresource. metav1.Condition
			// requires reason and message, which KServe leaves out of True
			// conditions (docs/kserve-compat.md): the test gives them.
			status := runtime.DeepCopyJSONValue(obj.Object["status"]).(map[string]any)
			for _, c := range status["conditions"].([]any) {
				cond := c.(map[string]any)
				cond["reason"], cond["message"] = "Ready", ""
			}
			created.Object["status"] = status
			if err := c.Status().Update(t.Context(), created, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("the API server refused KServe's status with strict field validation: %v", err)
			}
			for _, read := range []string{"v1alpha1", "v1alpha2"} {
				got := &unstructured.Unstructured{}
				got.SetAPIVersion("serving.kserve.io/" + read)
				got.SetKind("LLMInferenceService")
				if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(golden.JSON(t, docs[read]["spec"]), golden.JSON(t, got.Object["spec"])); diff != "" {
					t.Errorf("read as %s, the stored spec differs from the one written (-want +read):\n%s", read, diff)
				}
				if diff := cmp.Diff(golden.JSON(t, status), golden.JSON(t, got.Object["status"])); diff != "" {
					t.Errorf("read as %s, the stored status differs from the one written (-written +read):\n%s", read, diff)
				}
			}
		})
	}
}

func checkWarned(t *testing.T, who, out string) {
	t.Helper()
	for _, f := range unimplementedFields {
		if !strings.Contains(out, f+" is accepted and stored but not acted on") {
			t.Errorf("%s did not warn about %s; it said:\n%s", who, f, out)
		}
	}
}

// warningRecorder keeps the API server's warnings.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningRecorder) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}
