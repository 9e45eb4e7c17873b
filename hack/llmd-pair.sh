#!/usr/bin/env bash
# The llm-d pair of charts that hack/bench-postrender.sh times against ours:
# llm-d-modelservice (model-server pods) and llm-d-router-gateway (EPP,
# InferencePool, HTTPRoute; its library chart routerlib in charts/), each
# given the bench's one prefill/decode service. Their code is not ours and is
# never committed: it lives in $LLMD_CHARTS (git-ignored bin/llm-d-charts by
# default), fetched the normal way:
#
#   hack/llmd-pair.sh fetch    helm repo add + helm pull of both charts into
#                              $LLMD_CHARTS (needs network: the modelservice
#                              chart repository and ghcr.io); the OCI package
#                              of the router chart carries charts/routerlib
#   hack/llmd-pair.sh values   writes $LLMD_CHARTS/values/{modelservice,router}-pd.yaml
#   hack/llmd-pair.sh cmd      prints the two `helm template` runs (LLMD_CMD)
#
# MODELSERVICE_VERSION (v0.4.12) and ROUTER_VERSION (v0, the router's rolling
# chart tag) pick the versions. docs/benchmarks.md ("Post-render") says which
# copy was measured.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLMD_CHARTS=${LLMD_CHARTS:-$ROOT/bin/llm-d-charts}
MODELSERVICE_VERSION=${MODELSERVICE_VERSION:-v0.4.12}
ROUTER_VERSION=${ROUTER_VERSION:-v0}

helm_bin() { echo "$(bash "$ROOT/hack/setup-test-assets.sh" helm)/helm"; }

fetch() {
  local helm
  helm=$(helm_bin)
  mkdir -p "$LLMD_CHARTS"
  "$helm" repo add llm-d-modelservice https://llm-d-incubation.github.io/llm-d-modelservice/
  "$helm" repo update llm-d-modelservice
  "$helm" pull llm-d-modelservice/llm-d-modelservice --version "$MODELSERVICE_VERSION" --untar -d "$LLMD_CHARTS"
  "$helm" pull oci://ghcr.io/llm-d/charts/llm-d-router-gateway --version "$ROUTER_VERSION" --untar -d "$LLMD_CHARTS"
}

# The bench's service (Llama-3.1-70B; decode 2 replicas TP4, prefill 4
# replicas TP2; routing sidecar; EPP with P/D scheduling; InferencePool;
# HTTPRoute to the gateway), in each chart's own keys. modelservice: the
# layout of its examples/values-pd.yaml (vllmServe, NIXL kv-transfer). Router:
# the llm-d P/D guide's router values (base, then pd-disaggregation) and its
# gateway-mode --set flags; matchLabels select the modelservice pods.
values() {
  mkdir -p "$LLMD_CHARTS/values"
  cat > "$LLMD_CHARTS/values/modelservice-pd.yaml" <<'YAML'
multinode: false
modelArtifacts:
  name: meta-llama/Llama-3.1-70B-Instruct
  uri: hf://meta-llama/Llama-3.1-70B-Instruct
  size: 200Gi
  labels:
    llm-d.ai/inferenceServing: "true"
    llm-d.ai/model: llama-pd-1
routing:
  servicePort: 8000
  proxy:
    secure: false
decode:
  create: true
  replicas: 2
  parallelism: {tensor: 4}
  containers:
  - &vllm
    name: vllm
    image: ghcr.io/llm-d/llm-d-cuda:v0.4.0
    modelCommand: vllmServe
    args: ["--kv-transfer-config", '{"kv_connector":"NixlConnector", "kv_role":"kv_both"}']
    env:
    - {name: UCX_TLS, value: "cuda_ipc,cuda_copy,tcp"}
    - {name: VLLM_NIXL_SIDE_CHANNEL_HOST, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: VLLM_NIXL_SIDE_CHANNEL_PORT, value: "5557"}
    ports: [{containerPort: 5557, protocol: TCP}]
    resources: {limits: {nvidia.com/gpu: "4"}, requests: {nvidia.com/gpu: "4"}}
    mountModelVolume: true
prefill:
  create: true
  replicas: 4
  parallelism: {tensor: 2}
  containers:
  - <<: *vllm
    ports: [{containerPort: 8000, protocol: TCP}, {containerPort: 5557, protocol: TCP}]
    resources: {limits: {nvidia.com/gpu: "2"}, requests: {nvidia.com/gpu: "2"}}
YAML
  cat > "$LLMD_CHARTS/values/router-pd.yaml" <<'YAML'
router:
  epp:
    replicas: 1
    flags: {v: 2}
    resources: {requests: {cpu: "4", memory: 8Gi}, limits: {memory: 16Gi}}
    pluginsConfigFile: pd-config.yaml
    pluginsCustomConfig:
      pd-config.yaml: |
        apiVersion: llm-d.ai/v1
        kind: EndpointPickerConfig
        plugins:
        - type: always-disagg-pd-decider
        - type: disagg-profile-handler
          parameters:
            deciders:
              prefill: always-disagg-pd-decider
        - type: prefill-filter
        - type: decode-filter
        - type: approx-prefix-cache-producer
          parameters:
            maxPrefixTokensToMatch: 131072
        - type: inflight-load-producer
        - type: prefix-cache-affinity-filter
          parameters:
            peakPrefillThroughput: 33821
        - type: token-load-scorer
        - type: active-request-scorer
        - type: max-score-picker
        schedulingProfiles:
        - name: prefill
          plugins:
          - pluginRef: prefill-filter
          - pluginRef: prefix-cache-affinity-filter
          - pluginRef: token-load-scorer
          - pluginRef: max-score-picker
        - name: decode
          plugins:
          - pluginRef: decode-filter
          - pluginRef: active-request-scorer
          - pluginRef: max-score-picker
  extraServicePorts: [{name: http, port: 80, protocol: TCP, targetPort: 8081}]
  inferencePool: {failureMode: FailOpen}
  modelServers:
    protocol: http
    matchLabels: {llm-d.ai/inferenceServing: "true", llm-d.ai/model: llama-pd-1}
  proxy:
    proxyType: envoy
    args: ["--service-node", "envoy-sidecar", "--log-level", "warn", "--concurrency", "8",
           "--drain-strategy", "immediate", "--drain-time-s", "60", "-c", "/etc/envoy/envoy.yaml"]
    resources: {requests: {cpu: "4", memory: 8Gi}, limits: {memory: 16Gi}}
  tracing:
    otelExporterEndpoint: http://localhost:4317
    sampling: {sampler: parentbased_traceidratio, samplerArg: "0.1"}
provider: {name: none}
httpRoute: {create: true, inferenceGatewayName: kserve-ingress-gateway}
YAML
}

cmd() {
  local helm
  helm=$(helm_bin)
  echo "$helm template llama-pd-1 $LLMD_CHARTS/llm-d-modelservice --namespace bench -f $LLMD_CHARTS/values/modelservice-pd.yaml" \
    "&& $helm template llama-pd-1 $LLMD_CHARTS/llm-d-router-gateway --namespace bench -f $LLMD_CHARTS/values/router-pd.yaml"
}

case "${1:-}" in
  fetch) fetch ;;
  values) values ;;
  cmd) cmd ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
