package engine_test

import (
	"context"
	"fmt"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/preset"
)

// ExampleRender renders a service whose template comes from a small preset.
func ExampleRender() {
	in, err := manifest.Decode("example.yaml", []byte(`
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceServiceConfig
metadata: {name: kserve-config-llm-template, namespace: opendatahub}
spec:
  template:
    containers:
    - name: main
      image: vllm/vllm-openai:v0.11.0
      args: ["--served-model-name", "{{ .Spec.Model.Name }}"]
---
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {name: tiny, namespace: demo}
spec:
  model: {uri: "pvc://models/tiny"}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	catalog, err := preset.NewCatalog("opendatahub", in.Presets)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := engine.Render(context.Background(), in.Services[0].Service, catalog, engine.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := res.YAML()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// apiVersion: v1
	// kind: Service
	// metadata:
	//   labels:
	//     app.kubernetes.io/component: llminferenceservice-workload
	//     app.kubernetes.io/name: tiny
	//     app.kubernetes.io/part-of: llminferenceservice
	//   name: tiny-kserve-workload-svc
	//   namespace: demo
	// spec:
	//   ports:
	//   - appProtocol: https
	//     name: https
	//     port: 8000
	//     protocol: TCP
	//     targetPort: 8000
	//   selector:
	//     app.kubernetes.io/name: tiny
	//     app.kubernetes.io/part-of: llminferenceservice
	//     kserve.io/component: workload
	//     llm-d.ai/role: both
	//   type: ClusterIP
	// ---
	// apiVersion: networking.k8s.io/v1
	// kind: NetworkPolicy
	// metadata:
	//   labels:
	//     app.kubernetes.io/component: llminferenceservice-workload
	//     app.kubernetes.io/name: tiny
	//     app.kubernetes.io/part-of: llminferenceservice
	//   name: tiny-kserve
	//   namespace: demo
	// spec:
	//   ingress:
	//   - from:
	//     - namespaceSelector:
	//         matchExpressions:
	//         - key: kubernetes.io/metadata.name
	//           operator: In
	//           values:
	//           - opendatahub
	//     ports:
	//     - port: 8000
	//       protocol: TCP
	//   - from:
	//     - podSelector:
	//         matchExpressions:
	//         - key: app.kubernetes.io/component
	//           operator: In
	//           values:
	//           - llminferenceservice-workload
	//           - llminferenceservice-workload-prefill
	//           - llminferenceservice-workload-leader
	//           - llminferenceservice-workload-worker
	//           - llminferenceservice-workload-leader-prefill
	//           - llminferenceservice-workload-worker-prefill
	//         matchLabels:
	//           app.kubernetes.io/name: tiny
	//           app.kubernetes.io/part-of: llminferenceservice
	//   podSelector:
	//     matchLabels:
	//       app.kubernetes.io/component: llminferenceservice-workload
	//       app.kubernetes.io/name: tiny
	//       app.kubernetes.io/part-of: llminferenceservice
	//   policyTypes:
	//   - Ingress
	// ---
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   labels:
	//     app.kubernetes.io/component: llminferenceservice-workload
	//     app.kubernetes.io/name: tiny
	//     app.kubernetes.io/part-of: llminferenceservice
	//   name: tiny-kserve
	//   namespace: demo
	// spec:
	//   replicas: 1
	//   selector:
	//     matchLabels:
	//       app.kubernetes.io/component: llminferenceservice-workload
	//       app.kubernetes.io/name: tiny
	//       app.kubernetes.io/part-of: llminferenceservice
	//   strategy: {}
	//   template:
	//     metadata:
	//       labels:
	//         app.kubernetes.io/component: llminferenceservice-workload
	//         app.kubernetes.io/name: tiny
	//         app.kubernetes.io/part-of: llminferenceservice
	//         kserve.io/component: workload
	//         llm-d.ai/role: both
	//     spec:
	//       containers:
	//       - args:
	//         - --served-model-name
	//         - tiny
	//         image: vllm/vllm-openai:v0.11.0
	//         name: main
	//         resources: {}
	//         volumeMounts:
	//         - mountPath: /mnt/models
	//           name: kserve-pvc-source
	//           readOnly: true
	//           subPath: tiny
	//       volumes:
	//       - name: kserve-pvc-source
	//         persistentVolumeClaim:
	//           claimName: models
	//           readOnly: true
}
