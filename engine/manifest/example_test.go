package manifest_test

import (
	"fmt"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func ExampleDecode() {
	_, err := manifest.Decode("svc.yaml", []byte(`# a service with a typo
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata:
  name: llama
  namespace: team-a
spec:
  template:
    containers:
    - name: main
      imagee: vllm
`))
	fmt.Println(err)
	// Output:
	// svc.yaml:2: LLMInferenceService team-a/llama: spec.template.containers[0].imagee: Forbidden: unknown field
}
