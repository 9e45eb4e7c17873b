package merge_test

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/merge"
)

func ExampleSpecs() {
	var preset, service v1alpha2.LLMInferenceServiceSpec
	_ = yaml.Unmarshal([]byte(`
template:
  containers:
  - name: main
    image: vllm/vllm-openai:v0.11.0
    command: [/bin/bash, -c, 'exec vllm serve /mnt/models "$@"', vllm-serve]
    env: [{name: HOME, value: /home}]
`), &preset)
	_ = yaml.Unmarshal([]byte(`
template:
  containers:
  - name: main
    args: [--max-model-len, "8192"]
    env: [{name: VLLM_LOGGING_LEVEL, value: DEBUG}]
`), &service)
	merged, prov, err := merge.Specs([]merge.Layer{{Name: "preset", Spec: &preset}, {Name: "service", Spec: &service}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := yaml.Marshal(merged.Template.Containers)
	fmt.Print(string(out))
	fmt.Println("image from:", prov.Origin("spec.template.containers[name=main].image"))
	// Output:
	// - args:
	//   - --max-model-len
	//   - "8192"
	//   command:
	//   - /bin/bash
	//   - -c
	//   - exec vllm serve /mnt/models "$@"
	//   - vllm-serve
	//   env:
	//   - name: HOME
	//     value: /home
	//   - name: VLLM_LOGGING_LEVEL
	//     value: DEBUG
	//   image: vllm/vllm-openai:v0.11.0
	//   name: main
	//   resources: {}
	// image from: preset
}
