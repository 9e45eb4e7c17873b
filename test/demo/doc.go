// Command demo is `make demo`: odh-serving doing its main job on one machine,
// with no cluster and no GPU (docs/demo.md shows a run).
//
//  1. build bin/odh-serving; build once, then reuse, etcd, kube-apiserver and
//     helm, and kubectl with DEMO_KEEP=1 (hack/setup-test-assets.sh demo);
//  2. start kube-apiserver and etcd on loopback (test/localcluster), the
//     kubeconfig in bin/demo/;
//  3. helm install charts/odh-serving-crds, start the LeaderWorkerSet
//     operator with its webhooks (test/kwokcluster), then helm install
//     charts/odh-serving in controller mode;
//  4. run `odh-serving controller` as a process here (there is no kubelet),
//     its webhook reached through an EndpointSlice of the chart's webhook
//     Service that points at this machine; then `odh-serving api-server`
//     (MaaS) the same way, behind the chart's APIService, with the
//     certificate the controller made and the chart's ServiceAccount;
//  5. helm upgrade with three services on the CPU presets
//     (values-demo.yaml: single node, prefill/decode with a scheduler, data
//     parallel across nodes);
//  6. start the rest of the data plane, test tooling: the test gateway
//     (test/gateway), which listens for each Gateway at a loopback address
//     and writes the status it observes (the ingress Gateway annotated to
//     serve v1alpha2 InferencePools only), the model-server simulator at
//     every Running workload pod (test/modelserver), GIE's endpoint picker
//     as a process for every endpoint picker pod (test/endpointpicker's
//     Runner);
//  7. print `odh-serving status -A` as it changes until every service is
//     Ready (dual), then each service's objects by kind;
//  8. requests through the test gateway to each service's URL:
//     /v1/models, a chat completion, 50 at once with their spread over the
//     pods, a pod made not Ready by kwok's readiness stage getting no more;
//  9. the gateway serves v1 pools too (annotation removed): the controller
//     moves the routes from the v1alpha2 to the v1 pool while 20 requests a
//     second flow to each service, and the failed ones are counted;
//  10. auth at the gateway: Kuadrant's CRDs and the chart's AuthPolicy on
//     the ingress gateway, which the test gateway enforces (test tooling:
//     the policy's TokenReview and SubjectAccessReview on the API server);
//     a request without a token refused (401), one with a token of a
//     ServiceAccount granted get on qwen answered by a pod; the policy is
//     deleted after (the controller runs with auth off);
//  11. helm upgrade with llama-pd's decode replicas changed, and wait for the
//     Deployment to follow;
//  12. put an HPA on qwen's decode Deployment and scale it as the HPA
//     controller would (SIMULATED: there is no metrics server), then show
//     the controller handing spec.replicas over and leaving the count alone;
//  13. MaaS: `kubectl get models -A` as alice (premium) and bob (free), a
//     token request as alice, and the gateway's SubjectAccessReview of that
//     token on each service;
//  14. GPU services, one asking for more GPUs than a node has; 15. its fix;
//  16. garbage collection of a deleted service;
//  17. tear everything down, or with DEMO_KEEP=1 keep it and print how to use
//     kubectl against it.
//
// Each step prints a line with the time since the start. Other commands:
// `down` (stop a kept environment), `devcluster up|down` (the local cluster
// alone), `dataplane --kubeconfig FILE --epp BINARY --dir DIR` (step 6's
// data plane in the foreground).
//
// demo_test.go runs the same steps in-process and checks their outcome, so
// the demo cannot rot.
package main
