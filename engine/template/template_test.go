package template_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/template"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

func data(spec v1alpha2.LLMInferenceServiceSpec) *template.Data {
	return &template.Data{ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: "team"}, Spec: spec}
}

func TestExecute(t *testing.T) {
	withDP := v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Parallelism: &v1alpha2.ParallelismSpec{Data: ptr.To[int32](16)}}}
	withDP.Model.Name = ptr.To(`it's "quoted"`)
	tests := map[string]struct {
		text string
		spec v1alpha2.LLMInferenceServiceSpec
		want string
		err  string
	}{
		"ChildName":                       {text: "{{ ChildName .ObjectMeta.Name `-epp-service` }}", want: "llama-epp-service"},
		"pointer prints its value":        {text: "{{ .Spec.Parallelism.Data }}", spec: withDP, want: "16"},
		"fieldOr reads a set value":       {text: `{{ .Spec | fieldOr "parallelism.data" 1 }}`, spec: withDP, want: "16"},
		"fieldOr defaults through nil":    {text: `{{ .Spec | fieldOr "parallelism.data" 1 }}`, want: "1"},
		"KServe's nil-safe idiom":         {text: "{{ if and .Spec.Parallelism .Spec.Parallelism.Data }}x{{ else }}1{{ end }}", want: "1"},
		"quotes stay in their field":      {text: "{{ .Spec.Model.Name }}", spec: withDP, want: `it's "quoted"`},
		"deref for sprig pipelines":       {text: "{{ .Spec.Model.Name | deref | upper }}", spec: withDP, want: `IT'S "QUOTED"`},
		"fieldOr through a typed map key": {text: `{{ .Spec | fieldOr "template.overhead.cpu" "none" }}`, spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Template: &corev1.PodSpec{}}}, want: "none"},
		"until is bounded":                {text: "{{ range until 100000000 }}x{{ end }}", err: "until: 100000000 items is more than 10000"},
		"repeat is bounded":               {text: `{{ repeat 100000000 "abc" }}`, err: "repeat: 100000000 copies of 3 bytes"},
		"output is bounded":               {text: `{{ range until 2000 }}{{ repeat 1000 "x" }}{{ end }}`, err: "the template writes more than 1048576 bytes"},
		"loops are bounded":               {text: "{{ range until 9000 }}{{ range until 9000 }}x{{ end }}{{ end }}", err: "the template loops more than 100000 times"},
		"a range over a number too":       {text: "{{ range 2000000000 }}{{ end }}", err: "range over 100001 items: the template loops more than 100000 times"},
		"doubling a string is bounded":    {text: `{{ $s := repeat 1000000 "x" }}{{ range until 20 }}{{ $s = cat $s $s }}{{ end }}`, err: "the template's functions read and write more than 16777216 bytes"},
		"no recursion":                    {text: `{{ define "a" }}{{ template "a" }}{{ end }}{{ template "a" }}`, err: "define and block are not supported in presets"},
		"no template actions":             {text: `{{ template "field" }}`, err: `{{template "field"}}: template actions are not supported in presets`},
		"$ stays the data":                {text: `{{ $ := 1 }}{{ upper "x" }}`, err: "$ cannot be declared or assigned"},
		"no clock":                        {text: `{{ now }}`, err: `function "now" not defined`},
		"no random numbers":               {text: `{{ randAlpha 4 }}`, err: `function "randAlpha" not defined`},
		"no key generation":               {text: `{{ genPrivateKey "rsa" }}`, err: `function "genPrivateKey" not defined`},
		"pointers print what they hold":   {text: "{{ .Spec.Parallelism }} {{ list .Spec.Parallelism.Data }} {{ printf `%v` .Spec.Parallelism }}", spec: withDP, want: "{<nil> <nil> 16 <nil> <nil> false} [16] {<nil> <nil> 16 <nil> <nil> false}"},
		"argument counts leave $ out":     {text: `{{ upper }}`, err: "wrong number of args for upper: want 1 got 0"},
		"functions in nested pipelines":   {text: `{{ has "a" (list "a") }} {{ printf "%s" (upper (lower "X")) }}`, want: "true X"},
		"small sequences still work":      {text: "{{ range until 3 }}{{ . }}{{ end }}", want: "012"},
		"nil pointer is an error":         {text: "{{ .Spec.Parallelism.Data }}", err: "nil pointer evaluating *v1alpha2.ParallelismSpec.Data"},
		"unknown field is an error":       {text: "{{ .Spec.Nope }}", err: "can't evaluate field Nope"},
		"env is not available":            {text: `{{ env "HOME" }}`, err: `function "env" not defined`},
		"fieldOr names a bad path":        {text: `{{ .Spec | fieldOr "parallelism.bogus" 1 }}`, spec: withDP, err: `fieldOr "parallelism.bogus": v1alpha2.ParallelismSpec has no field "bogus"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := template.Execute(tc.text, data(tc.spec))
			if golden.ErrorCase(t, err, tc.err) {
				return
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEvaluateNamesFieldAndOrigin(t *testing.T) {
	spec := &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Template: &corev1.PodSpec{
		NodeSelector: map[string]string{"pool": "{{ .ObjectMeta.Namespace }}"},
		Containers:   []corev1.Container{{Name: "main", Args: []string{"ok", "{{ .Spec.Parallelism.Tensor }}"}}},
	}}}
	err := template.Evaluate(spec, data(*spec.DeepCopy()), func(string) string { return "team/gpu-preset" })
	want := `template in spec.template.containers[name=main].args[1] (set by team/gpu-preset): "{{ .Spec.Parallelism.Tensor }}"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if spec.Template.NodeSelector["pool"] != "team" {
		t.Errorf("templates in maps are evaluated: nodeSelector = %v", spec.Template.NodeSelector)
	}
}

func TestErrorHidesEnvValues(t *testing.T) {
	spec := &v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Template: &corev1.PodSpec{
		Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{{Name: "TOKEN", Value: "{{ .Nope }}hf_secret"}}}},
	}}}
	err := template.Evaluate(spec, data(*spec.DeepCopy()), nil)
	want := `template in spec.template.containers[name=main].env[name=TOKEN].value: (the text of an env value is not shown): 1:3: at <.Nope>: can't evaluate field Nope`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hf_secret") {
		t.Fatalf("error = %v, want %q and no env text", err, want)
	}
}
