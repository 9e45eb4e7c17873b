package preset_test

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/preset"
)

func ExampleWellKnown() {
	var spec v1alpha2.LLMInferenceServiceSpec
	_ = yaml.Unmarshal([]byte(`
parallelism: {data: 16, dataLocal: 8}
worker: {}
prefill: {replicas: 2}
router: {route: {}, gateway: {}, scheduler: {}}
`), &spec)
	for _, name := range preset.WellKnown(&spec, preset.DefaultPrefix) {
		fmt.Println(name)
	}
	// Output:
	// kserve-config-llm-scheduler
	// kserve-config-llm-router-route
	// kserve-config-llm-prefill-template
	// kserve-config-llm-decode-worker-data-parallel
}
