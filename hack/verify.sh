#!/usr/bin/env bash
# Regenerates everything generated and fails if the tree changes: deep-copy
# code, our CRDs, the third-party CRDs, gofmt and go.mod/go.sum; and fails
# when the docs drift from the code (hack/doccheck: README.md's layout table
# against the Go packages, docs/demo.md's steps against test/demo's).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
fail=0
before=$(mktemp -d)
trap 'rm -rf "$before"' EXIT
cp -a api "$before/"
mkdir -p "$before/openapi" && cp -a internal/apiserver/openapi/. "$before/openapi/"
make -s generate
bash hack/sync-crds.sh
if ! diff -r "$before/api" api >&2 || ! diff -r "$before/openapi" internal/apiserver/openapi >&2; then
  echo "generated files or CRDs are out of date; run 'make generate sync-crds' and commit the result" >&2
  fail=1
fi
cp -a charts "$before/"
bash hack/chart-sync.sh
if ! diff -r "$before/charts" charts >&2; then
  echo "the charts' versions (VERSION) or copies of presets/ and api/crds are out of date; run 'make chart-sync' and commit the result" >&2
  fail=1
fi
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt wants to reformat:" >&2; echo "$unformatted" >&2; fail=1
fi
if ! go run ./hack/doccheck; then
  echo "the docs drifted from the code (above); fix the text, or the README's layout table" >&2; fail=1
fi
if ! go mod tidy -diff >/dev/null; then
  echo "go.mod/go.sum are not tidy; run 'go mod tidy'" >&2; fail=1
fi
# The tool modules build what they share with odh-serving at the versions it names, so the Go build
# cache compiles those packages once for all: a cold `make demo` and `.ci/run` count on it
# (docs/benchmarks.md, Budgets). Module lists hold a line per module: path, version.
mods() { go list -deps -f '{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}' "$@" | sort -u; }
# drift DIR WANT FROM BUILT HOW fails the check, naming the modules, when BUILT (the tool module DIR's
# list) has a module of WANT (the versions FROM names) at another version; HOW says how to align.
drift() {
  local dir=$1 want=$2 from=$3 built=$4 how=$5 lines
  lines=$(join <(echo "$want") <(echo "$built") | awk '$2 != $3')
  if [ -n "$lines" ]; then
    echo "$dir builds modules at other versions than $from (module, wanted, built):" >&2
    echo "$lines" >&2
    echo "align them: in $dir, $how, then go mod tidy" >&2
    fail=1
  fi
}
ours=$(mods -test ./...)
# hack/k8s-assets (etcd and the Kubernetes binaries) shares client-go, the API types and the API
# server library with us: about half of the Kubernetes binaries' packages.
theirs=$(cd hack/k8s-assets && mods ./etcd k8s.io/kubernetes/cmd/{kube-apiserver,kube-scheduler,kube-controller-manager}) # not kubectl: only DEMO_KEEP=1 builds it
drift hack/k8s-assets "$ours" go.mod "$theirs" "go get MODULE@VERSION with go.mod's version for each"
# hack/kwok-assets the same for kwok: odh-serving's versions, and hack/k8s-assets' for the modules
# odh-serving does not use (the kubelet's API).
kwok=$(cd hack/kwok-assets && mods sigs.k8s.io/kwok/cmd/kwok)
want=$( (echo "$ours"; join -v1 <(echo "$theirs") <(echo "$ours")) | sort -u)
drift hack/kwok-assets "$want" "go.mod or hack/k8s-assets" "$kwok" "go get MODULE@VERSION for each (or a replace where kwok asks for more)"
for crd in api/crds/serving.kserve.io_*.yaml; do
  size=$(wc -c < "$crd")
  if [ "$size" -gt 262144 ]; then
    echo "$crd is $size bytes; CRDs must stay under 256 KiB for client-side apply" >&2; fail=1
  fi
done
exit $fail
