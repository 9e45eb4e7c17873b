#!/usr/bin/env bash
# Times `helm template` of charts/odh-serving alone and piped through
# `odh-serving post-render --mode static`, for 1, 100 and 1,000 prefill/decode
# services, in one hyperfine command (docs/benchmarks.md, "Post-render").
# Needs hyperfine (Debian: apt-get install hyperfine); uses the helm that
# hack/setup-test-assets.sh builds. RUNS sets the runs per command (10),
# BENCH_DIR keeps the values files and the markdown table (a temp dir).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
HELM="$(bash hack/setup-test-assets.sh)/helm"
OUT=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$OUT"
go build -o "$OUT/odh-serving" ./cmd/odh-serving

# The prefill/decode service of examples/prefill-decode.yaml, n times, as
# the chart's `services:` values; static mode with cert-manager certificates.
for n in 1 100 1000; do
  {
    printf 'controller:\n  staticMode: true\ncertMode: cert-manager\nservices:\n'
    for i in $(seq -w 1 "$n"); do
      cat <<YAML
  llama-pd-$i:
    spec:
      model: {uri: "hf://meta-llama/Llama-3.1-70B-Instruct", name: meta-llama/Llama-3.1-70B-Instruct}
      replicas: 2
      parallelism: {tensor: 4}
      template: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: "4"}}}]}
      prefill:
        replicas: 4
        parallelism: {tensor: 2}
        template: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: "2"}}}]}
      router: {route: {}, gateway: {}, scheduler: {}}
YAML
    done
  } > "$OUT/values-$n.yaml"
done

TEMPLATE="$HELM template bench charts/odh-serving --namespace bench -f $OUT/values-{n}.yaml"
# hyperfine runs each command for n=1, then each for n=100, ...: one name each.
names=()
for n in 1 100 1000; do
  names+=(--command-name "helm template, $n P/D" --command-name "helm template | post-render --mode static, $n P/D")
done
hyperfine --warmup 1 --runs "${RUNS:-10}" --parameter-list n 1,100,1000 "${names[@]}" \
  "$TEMPLATE > /dev/null" \
  "$TEMPLATE | $OUT/odh-serving post-render --mode static --namespace bench --cert-mode cert-manager > /dev/null" \
  --export-markdown "$OUT/post-render.md"
echo "table: $OUT/post-render.md" >&2
