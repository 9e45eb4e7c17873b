package build_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func ExampleChildren() {
	svc := &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: "team-a"}}
	var spec v1alpha2.LLMInferenceServiceSpec
	_ = yaml.Unmarshal([]byte(`
model: {uri: "hf://meta-llama/Llama-3.1-8B-Instruct"}
parallelism: {data: 4, dataLocal: 2}
template: {containers: [{name: main, image: vllm}]}
worker: {containers: [{name: main, image: vllm}]}
`), &spec)
	objs, err := build.Children(svc, &spec, build.Options{Phase: convention.PhaseV1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		fmt.Println(o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
	}
	// Output:
	// ServiceAccount llama-kserve-mn
	// LeaderWorkerSet llama-kserve-mn
	// Service llama-kserve-workload-svc
}
