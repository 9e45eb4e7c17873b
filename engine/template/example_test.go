package template_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/template"
)

func ExampleExecute() {
	tensor := int32(4)
	data := &template.Data{
		ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: "team-a"},
		Spec:       v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{Parallelism: &v1alpha2.ParallelismSpec{Tensor: &tensor}}},
	}
	for _, text := range []string{
		"/{{ .ObjectMeta.Namespace }}/{{ .ObjectMeta.Name }}/v1/completions",
		"{{ ChildName .ObjectMeta.Name `-inference-pool` }}",
		`--tensor-parallel-size {{ .Spec | fieldOr "parallelism.tensor" 1 }} --data-parallel-size {{ .Spec | fieldOr "parallelism.data" 1 }}`,
	} {
		out, err := template.Execute(text, data)
		fmt.Println(out, err)
	}
	// Output:
	// /team-a/llama/v1/completions <nil>
	// llama-inference-pool <nil>
	// --tensor-parallel-size 4 --data-parallel-size 1 <nil>
}
