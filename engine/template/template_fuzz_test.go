package template_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/fieldpath"
	"github.com/opendatahub-io/odh-serving/engine/internal/corpus"
	"github.com/opendatahub-io/odh-serving/engine/template"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// fuzzOrigin is the preset the fuzzed strings come from; errors must name it.
const fuzzOrigin = "team/fuzz-preset"

// fuzzTimeLimit bounds one evaluation. The slowest legitimate template (the
// scheduler's configuration) takes well under a millisecond; the limit is
// generous so a busy machine does not fail the target.
const fuzzTimeLimit = 5 * time.Second

// The fields the fuzzed text is put in: a list item and a map value.
const (
	fuzzArgPath  = "spec.template.containers[name=main].args[0]"
	fuzzNodePath = "spec.template.nodeSelector[fuzz]"
)

// FuzzTemplate evaluates random preset strings in two fields of a spec.
// Seeds are every string with a template in the shipped presets and the
// golden cases. Properties:
//   - no panic;
//   - bounded time (fuzzTimeLimit) and output (template.MaxOutput per field);
//   - deterministic: two evaluations give the same fields and errors;
//   - an error names the field and the preset that set it.
//
// Run it longer with: go test ./engine/template -run '^$' -fuzz '^FuzzTemplate$' -fuzztime 2m
func FuzzTemplate(f *testing.F) {
	for _, s := range seedTemplates(f) {
		f.Add(s)
	}
	for _, s := range []string{
		"{{ range until 3 }}{{ . }}{{ end }}",
		`{{ .Spec | fieldOr "parallelism.data" 1 }}`,
		`{{ index .ObjectMeta.Labels "app" }}`,
		"{{ .Spec.Model.Name | deref | upper | repeat 3 }}",
		`{{ printf "%08d" 1 }}`,
		`{{ $s := "ab" }}{{ $s = cat $s $s }}{{ $s }}`,
		`{{ list 1 2 3 | toJson }}`,
		"{{ toYaml .Spec.Parallelism }}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		first, firstErr := evaluateWithin(t, text)
		second, secondErr := evaluateWithin(t, text)
		if errString(firstErr) != errString(secondErr) {
			t.Fatalf("two evaluations of %q fail differently:\n%v\n%v", text, firstErr, secondErr)
		}
		if firstErr != nil {
			checkNamesFieldAndPreset(t, text, firstErr)
			return
		}
		a, b := marshal(t, first), marshal(t, second)
		if a != b {
			t.Fatalf("two evaluations of %q differ:\n%s\n%s", text, a, b)
		}
		for _, out := range []string{first.Template.Containers[0].Args[0], first.Template.NodeSelector["fuzz"]} {
			if len(out) > template.MaxOutput {
				t.Fatalf("%q wrote %d bytes, more than %d", text, len(out), template.MaxOutput)
			}
		}
	})
}

// evaluateWithin evaluates text in both fields and fails the test when that
// takes longer than fuzzTimeLimit.
func evaluateWithin(t *testing.T, text string) (*v1alpha2.LLMInferenceServiceSpec, error) {
	t.Helper()
	spec := fuzzSpec(text)
	data := &template.Data{
		ObjectMeta: metav1.ObjectMeta{
			Name: "llama", Namespace: "team",
			Labels:      map[string]string{"app": "llama"},
			Annotations: map[string]string{"odh-serving.opendatahub.io/scheduler-profile": "auto"},
		},
		Spec:         *fuzzSpec("").DeepCopy(),
		GlobalConfig: template.GlobalConfig{SystemNamespace: "opendatahub", Images: map[string]string{"vllm": "vllm:1"}},
	}
	done := make(chan error, 1)
	go func() {
		done <- template.Evaluate(spec, data, func(string) string { return fuzzOrigin })
	}()
	select {
	case err := <-done:
		return spec, err
	case <-time.After(fuzzTimeLimit):
		t.Fatalf("evaluating %q took longer than %s", text, fuzzTimeLimit)
		return nil, nil
	}
}

// fuzzSpec is a single-node spec with data parallelism and text in two fields.
func fuzzSpec(text string) *v1alpha2.LLMInferenceServiceSpec {
	spec := &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{
		Replicas:    ptr.To[int32](2),
		Parallelism: &v1alpha2.ParallelismSpec{Tensor: ptr.To[int32](4), Data: ptr.To[int32](8), DataLocal: ptr.To[int32](4)},
		Template: &corev1.PodSpec{
			NodeSelector: map[string]string{"fuzz": text},
			Containers:   []corev1.Container{{Name: "main", Image: "vllm", Args: []string{text}}},
		},
	}}
	spec.Model.Name = ptr.To("org/model")
	spec.Model.URI = "hf://org/model"
	return spec
}

// checkNamesFieldAndPreset requires every error to be a template.Error for
// one of the two fields that names the preset.
func checkNamesFieldAndPreset(t *testing.T, text string, err error) {
	t.Helper()
	for _, e := range golden.Leaves(err) {
		var te *template.Error
		if !errors.As(e, &te) {
			t.Fatalf("%q: error %v is not a template.Error", text, e)
		}
		if te.Path != fuzzArgPath && te.Path != fuzzNodePath {
			t.Fatalf("%q: error names field %q, want one of the fuzzed fields", text, te.Path)
		}
		if !strings.Contains(e.Error(), te.Path) || !strings.Contains(e.Error(), "(set by "+fuzzOrigin+")") {
			t.Fatalf("%q: error %q does not name the field and the preset", text, e)
		}
	}
}

// seedTemplates collects every string holding "{{" from the shipped presets
// and the golden cases.
func seedTemplates(f *testing.F) []string {
	f.Helper()
	specs, err := corpus.Specs("../..")
	if err != nil {
		f.Fatal(err)
	}
	var out []string
	for _, spec := range specs {
		err := fieldpath.Walk("spec", spec, fieldpath.Strings, func(_ *fieldpath.Path, v reflect.Value) error {
			if v.Kind() == reflect.String && strings.Contains(v.String(), "{{") {
				out = append(out, v.String())
			}
			return nil
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	if len(out) < 10 {
		f.Fatalf("only %d seed templates", len(out))
	}
	return out
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
