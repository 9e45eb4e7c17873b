package main

// layoutAtF1526b2 is the README's layout section at f1526b2, before the
// check existed.
const layoutAtF1526b2 = "\n" + `## Layout

| folder | what it holds |
|---|---|
| ` + "`" + `engine/` + "`" + ` | the renderer: ` + "`" + `preset` + "`" + ` (pick presets), ` + "`" + `merge` + "`" + ` (strategic merge, with provenance), ` + "`" + `template` + "`" + ` (Go templates over the merged spec), ` + "`" + `build` + "`" + ` (the children), ` + "`" + `naming` + "`" + `, ` + "`" + `fieldpath` + "`" + `, ` + "`" + `manifest` + "`" + ` (YAML streams in and out); golden cases in ` + "`" + `engine/testdata/` + "`" + ` |
| ` + "`" + `presets/` + "`" + ` | the well-known presets, one folder each, embedded in the binary |
| ` + "`" + `cmd/odh-serving` + "`" + `, ` + "`" + `internal/cli/` + "`" + ` | the ` + "`" + `odh-serving` + "`" + ` command: ` + "`" + `render` + "`" + `, ` + "`" + `post-render` + "`" + `, ` + "`" + `presets list|show|lint` + "`" + `, ` + "`" + `controller` + "`" + `, ` + "`" + `status` + "`" + `, ` + "`" + `crds status|remove` + "`" + `, ` + "`" + `api-server` + "`" + `, ` + "`" + `uninstall` + "`" + `, ` + "`" + `version` + "`" + ` |
| ` + "`" + `internal/controller/` + "`" + ` | the in-cluster controller: server-side apply, label-inventory GC, status, watch-based enablement ([docs/controller.md](docs/controller.md)) |
| ` + "`" + `internal/migration/` + "`" + `, ` + "`" + `internal/crdlifecycle/` + "`" + `, ` + "`" + `internal/certs/` + "`" + ` | the v1alpha2→v1 InferencePool migration decision, the GIE CRD lifecycle, ECDSA serving certificates |
| ` + "`" + `charts/odh-serving/` + "`" + `, ` + "`" + `charts/odh-serving-crds/` + "`" + ` | the Helm charts (presets and CRDs copied in by ` + "`" + `make chart-sync` + "`" + `) |
| ` + "`" + `internal/overlay/` + "`" + `, ` + "`" + `overlays/` + "`" + ` | kustomize overlays (` + "`" + `odh` + "`" + `, ` + "`" + `openshift` + "`" + `, ` + "`" + `kubernetes` + "`" + `) and how post-render applies them in memory |
| ` + "`" + `plugin/odh-serving/` + "`" + ` | the Helm 4 post-renderer plugin (` + "`" + `make install-plugin` + "`" + `) |
| ` + "`" + `internal/presetlint/` + "`" + ` | renders presets into sample topologies and checks the output against the CRD schemas |
| ` + "`" + `examples/` + "`" + ` | example services |
| ` + "`" + `api/` + "`" + ` | the API types (` + "`" + `v1alpha1` + "`" + `, ` + "`" + `v1alpha2` + "`" + `; ` + "`" + `modelserving/v1alpha1` + "`" + `, the api-server's kinds, no CRD), ` + "`" + `validation` + "`" + `, and ` + "`" + `crds/` + "`" + ` (ours, generated; GIE, Gateway API, LWS and cert-manager, copied from pinned modules; Kuadrant's policies, copied unmodified with their provenance and checksums) |
| ` + "`" + `internal/webhook/` + "`" + ` | the validating and conversion webhooks |
| ` + "`" + `test/controlplane/` + "`" + ` | starts a real kube-apiserver and etcd with every CRD (or the sets a package's tests use) and our webhooks (envtest) |
| ` + "`" + `test/testenv/` + "`" + ` | what those tests share: the TestMain that starts a control plane, namespaces, polling with the test's context, the write recorder (and conflict injection), kubeconfigs and an isolated helm runner; ` + "`" + `TEST_LOG=1` + "`" + ` shows the controller's logs |
| ` + "`" + `test/integration/` + "`" + `, ` + "`" + `test/controller/` + "`" + `, ` + "`" + `test/migration/` + "`" + `, ` + "`" + `test/chart/` + "`" + `, ` + "`" + `test/certs/` + "`" + `, ` + "`" + `test/overlays/` + "`" + `, ` + "`" + `test/plugin/` + "`" + `, ` + "`" + `test/gitops/` + "`" + `, ` + "`" + `test/badinput/` + "`" + `, ` + "`" + `test/security/` + "`" + ` | tests against that control plane, with real helm (3 and 4) and kustomize |
| ` + "`" + `test/endpointpicker/` + "`" + ` | test tooling for running GIE's endpoint picker on what our presets render (the config adapter, and the Runner that plays the kubelet for endpoint picker pods in ` + "`" + `make demo` + "`" + `), and the static check that every plugin type and parameter the presets render is one llm-d-router registers (list pinned in its ` + "`" + `testdata/` + "`" + `) |
| ` + "`" + `test/modelserver/` + "`" + ` | test tooling: a model-server simulator (OpenAI completions, ` + "`" + `/v1/models` + "`" + `, vLLM's metrics, TLS with the pod's mounted certificate) listening at each Running pod's loopback IP |
| ` + "`" + `test/authpolicy/` + "`" + ` | test tooling: applies a rendered Kuadrant AuthPolicy's TokenReview and SubjectAccessReview rules to a request on a real API server, as Authorino would ([docs/auth.md](docs/auth.md)) |
| ` + "`" + `test/gateway/` + "`" + ` | test tooling, never shipped: a test gateway that follows Gateways and HTTPRoutes as Gateway API specifies and sends InferencePool traffic through the pool's endpoint picker over ext_proc (Envoy's protocol), with a loopback address per Gateway; with ` + "`" + `AuthPolicies` + "`" + ` it enforces the Kuadrant AuthPolicy in effect on each request ([docs/auth.md](docs/auth.md)) |
| ` + "`" + `test/requests/` + "`" + ` | real requests through GIE's endpoint picker (built by ` + "`" + `hack/setup-test-assets.sh` + "`" + `) for a rendered service in each migration phase, with the tooling above ([docs/demo.md](docs/demo.md#requests-for-real)) |
| ` + "`" + `test/localcluster/` + "`" + `, ` + "`" + `test/demo/` + "`" + ` | ` + "`" + `make demo` + "`" + `: a local API server and the demo driver |
| ` + "`" + `hack/` + "`" + ` | tool builds and scripts: ` + "`" + `setup-test-assets.sh` + "`" + ` (also builds GIE's endpoint picker, ` + "`" + `epp` + "`" + `, on request), ` + "`" + `sync-crds.sh` + "`" + `, ` + "`" + `verify.sh` + "`" + `, ` + "`" + `testrun/` + "`" + ` (` + "`" + `make test` + "`" + `'s runner: keeps the linked test binaries in ` + "`" + `bin/test` + "`" + `), ` + "`" + `k8s-assets/` + "`" + ` (a nested module that builds etcd and the Kubernetes binaries, at odh-serving's versions of the modules both use) |
| ` + "`" + `engine/tier/` + "`" + `, ` + "`" + `internal/apiserver/` + "`" + `, ` + "`" + `test/apiserver/` + "`" + ` | MaaS: ODH's tiers and the tiers annotation, read one way by the controller and the API server; the extension API server (` + "`" + `internal/apiserver/openapi` + "`" + `: its generated OpenAPI) and its tests behind a kube-apiserver configured as front proxy ([docs/maas.md](docs/maas.md)) |
| ` + "`" + `docs/` + "`" + ` | guides, benchmark records, the KServe compatibility table ([docs/kserve-compat.md](docs/kserve-compat.md)), autoscaling ([docs/autoscaling.md](docs/autoscaling.md)) and TLS from each gateway implementation to the backends ([docs/tls.md](docs/tls.md)) |

`
