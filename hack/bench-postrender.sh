#!/usr/bin/env bash
# Times the post-render path side by side (docs/benchmarks.md, "Post-render"):
# each table's commands run in turn, round after round (hack/abbench), so
# the host's load reaches every side alike, and the ratio is the number to
# read.
#
#   1. `helm template` of charts/odh-serving with one prefill/decode service
#      piped through `odh-serving-render post-render --mode static`, against
#      the same pipeline with the odh-serving of BASE (the commit before the
#      lean render path) and against the llm-d pair of charts (modelservice +
#      router-gateway, the same service in their values): LLMD_CMD is the
#      shell command that templates them; with LLMD_CHARTS (a folder holding
#      both charts and values/, see hack/llmd-pair.sh) it is the two
#      `helm template` runs hack/llmd-pair.sh prints; with neither, that row
#      is left out;
#   2. post-render alone of 1 and 1,000 services, and the process start
#      (`version`), new against BASE.
#
# Uses the helm that hack/setup-test-assets.sh builds. RUNS (20) and
# WARMUP (3) set the runs per command; BENCH_DIR keeps the binaries, values
# files and tables (a temp dir); BASE is the baseline commit (0c5d001).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
HELM="$(bash hack/setup-test-assets.sh)/helm"
OUT=${BENCH_DIR:-$(mktemp -d)}
BASE=${BASE:-0c5d001}
RUNS=${RUNS:-20}
WARMUP=${WARMUP:-3}
mkdir -p "$OUT"
if [ -z "${LLMD_CMD:-}" ] && [ -n "${LLMD_CHARTS:-}" ]; then
  LLMD_CMD=$(LLMD_CHARTS=$LLMD_CHARTS bash hack/llmd-pair.sh cmd)
fi
LOAD_BEFORE=$(cut -d" " -f1-3 /proc/loadavg)

export CGO_ENABLED=0 GOFLAGS=-trimpath
go build -o "$OUT/odh-serving-render" ./cmd/odh-serving-render
go build -o "$OUT/abbench" ./hack/abbench
rm -rf "$OUT/base" && mkdir -p "$OUT/base"
git archive "$BASE" | tar -x -C "$OUT/base"
(cd "$OUT/base" && go build -o "$OUT/odh-serving-base" ./cmd/odh-serving)

# The prefill/decode service of examples/prefill-decode.yaml, n times, as
# the chart's `services:` values; static mode with cert-manager certificates.
for n in 1 1000; do
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
  "$HELM" template bench charts/odh-serving --namespace bench -f "$OUT/values-$n.yaml" > "$OUT/template-$n.yaml"
done
# That the lean binary writes what the full one of the same tree writes is
# TestSameOutputAsTheFullCommandLine's job; against BASE the output may
# differ where the engine changed since (say so, the timing still compares).
PR="post-render --mode static --namespace bench --cert-mode cert-manager"
if ! cmp -s <("$OUT/odh-serving-render" $PR < "$OUT/template-1.yaml") <("$OUT/odh-serving-base" $PR < "$OUT/template-1.yaml"); then
  echo "bench-postrender: the output differs from $BASE's (the engine changed since)" >&2
fi

{
  echo "## helm template + post-render, 1 P/D service"
  echo
  TEMPLATE="$HELM template bench charts/odh-serving --namespace bench -f $OUT/values-1.yaml"
  cmds=("$TEMPLATE | $OUT/odh-serving-render $PR > /dev/null"
    "$TEMPLATE | $OUT/odh-serving-base $PR > /dev/null"
    "$TEMPLATE > /dev/null")
  names=(-name "helm template \| odh-serving-render post-render" -name "helm template \| odh-serving post-render ($BASE)" -name "helm template alone")
  if [ -n "${LLMD_CMD:-}" ]; then
    cmds+=("$LLMD_CMD > /dev/null")
    names+=(-name "llm-d pair (two helm template runs)")
    echo "llm-d pair: \`$LLMD_CMD\`"
    echo
  fi
  "$OUT/abbench" -runs "$RUNS" -warmup "$WARMUP" "${names[@]}" "${cmds[@]}"
  echo
  echo "## post-render alone, and the process start"
  echo
  "$OUT/abbench" -runs "$RUNS" -warmup "$WARMUP" \
    -name "odh-serving-render version" -name "odh-serving version ($BASE)" \
    -name "odh-serving-render post-render, 1 P/D" -name "odh-serving post-render ($BASE), 1 P/D" \
    "$OUT/odh-serving-render version > /dev/null" "$OUT/odh-serving-base version > /dev/null" \
    "$OUT/odh-serving-render $PR < $OUT/template-1.yaml > /dev/null" "$OUT/odh-serving-base $PR < $OUT/template-1.yaml > /dev/null"
  echo
  echo "## post-render alone, 1,000 P/D services"
  echo
  "$OUT/abbench" -runs "$(( (RUNS + 1) / 2 ))" -warmup 1 \
    -name "odh-serving-render post-render, 1,000 P/D" -name "odh-serving post-render ($BASE), 1,000 P/D" \
    "$OUT/odh-serving-render $PR < $OUT/template-1000.yaml > /dev/null" "$OUT/odh-serving-base $PR < $OUT/template-1000.yaml > /dev/null"
  echo
  echo "Host: $(nproc) cores, $(uname -m), load average before/after: $LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg); $("$HELM" version --short)."
} > "$OUT/post-render.md"
cat "$OUT/post-render.md"
echo "tables: $OUT/post-render.md" >&2
