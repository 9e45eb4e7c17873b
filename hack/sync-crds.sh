#!/usr/bin/env bash
# Copies the third-party CRDs that odh-serving installs or tests against from
# the Go modules pinned in go.mod into api/crds/thirdparty/. A version bump in
# go.mod followed by `make sync-crds` updates them; `make verify` checks that
# they match the pinned modules.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/api/crds/thirdparty}
cd "$ROOT"
moddir() { go list -m -f '{{.Dir}}' "$1"; }
GIE=$(moddir sigs.k8s.io/gateway-api-inference-extension)
GWAPI=$(moddir sigs.k8s.io/gateway-api)
LWS=$(moddir sigs.k8s.io/lws)
# Kuadrant's policy CRDs: the module proxy does not serve kuadrant-operator,
# so they are kept from the tree (or taken from a checkout of its
# config/crd/bases in $KUADRANT_CRDS) and checked against their recorded
# checksums; thirdparty/kuadrant/README.md says where they come from.
KUADRANT_KEEP=$(mktemp -d)
trap 'rm -rf "$KUADRANT_KEEP"' EXIT
cp -a "$OUT/kuadrant/." "$KUADRANT_KEEP/"
if [ -n "${KUADRANT_CRDS:-}" ]; then
  for f in kuadrant.io_authpolicies.yaml kuadrant.io_ratelimitpolicies.yaml kuadrant.io_tokenratelimitpolicies.yaml; do
    cp "$KUADRANT_CRDS/$f" "$KUADRANT_KEEP/$f"
  done
  (cd "$KUADRANT_KEEP" && sha256sum kuadrant.io_*.yaml > SHA256SUMS)
fi
(cd "$KUADRANT_KEEP" && sha256sum --quiet -c SHA256SUMS) || {
  echo "api/crds/thirdparty/kuadrant: the CRDs do not match SHA256SUMS; copy them unmodified from kuadrant-operator (README.md there)" >&2
  exit 1
}
rm -rf "$OUT"
mkdir -p "$OUT/gie" "$OUT/gateway-api" "$OUT/lws" "$OUT/kuadrant"
cp -a "$KUADRANT_KEEP/." "$OUT/kuadrant/"
# Every CRD the GIE release ships: both InferencePools, InferenceObjective,
# InferenceModelRewrite (both read by the endpoint picker) and
# InferencePoolImport. odh-serving installs and owns them all.
cp "$GIE"/config/crd/bases/inference.networking*.yaml "$OUT/gie/"
# Gateway API standard channel: every CRD, and nothing else (newer releases add
# a ValidatingAdmissionPolicy beside them).
for f in "$GWAPI"/config/crd/standard/*.yaml; do
  grep -q '^kind: CustomResourceDefinition' "$f" && cp "$f" "$OUT/gateway-api/"
done
# cert-manager's Certificate and Issuer CRDs, for the cert-manager certificate
# mode. cert-manager is not a dependency of the Go module, so it is fetched
# at its pinned version outside it; its CRD files carry Helm-templated label
# values, which are replaced with a fixed one.
CERT_MANAGER_VERSION=v1.16.2
CM=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
mkdir -p "$OUT/cert-manager"
for f in crd-certificates.yaml crd-issuers.yaml crd-clusterissuers.yaml; do
  sed "s/'{{[^}]*}}'/cert-manager/" "$CM/deploy/crds/$f" > "$OUT/cert-manager/$f"
done
# Istio's DestinationRule CRD, for the DestinationRules that tell an Istio
# gateway to originate TLS to the backends. Like cert-manager, Istio is no
# dependency of the Go module: istio.io/api, which ships every Istio CRD in one
# generated file, is fetched at its pinned version and the DestinationRule
# document cut out of it.
ISTIO_API_VERSION=v1.31.4
ISTIO=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "istio.io/api@$ISTIO_API_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
mkdir -p "$OUT/istio"
awk -v want="destinationrules.networking.istio.io" '
  /^---$/ { if (keep) printf "%s", doc; doc = ""; keep = 0; next }
  { doc = doc $0 "\n"; if ($0 == "  name: " want) keep = 1 }
  END { if (keep) printf "%s", doc }
' "$ISTIO/kubernetes/customresourcedefinitions.gen.yaml" > "$OUT/istio/networking.istio.io_destinationrules.yaml"
grep -q '^  name: destinationrules.networking.istio.io$' "$OUT/istio/networking.istio.io_destinationrules.yaml"
# prometheus-operator's PodMonitor and ServiceMonitor CRDs, for the monitors
# of each service; from its Go module, at its pinned version, outside ours.
PROMETHEUS_OPERATOR_VERSION=v0.85.0
PO=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
mkdir -p "$OUT/prometheus-operator"
for f in monitoring.coreos.com_podmonitors.yaml monitoring.coreos.com_servicemonitors.yaml; do
  cp "$PO/example/prometheus-operator-crd/$f" "$OUT/prometheus-operator/"
done
# KEDA's ScaledObject CRD, for the ScaledObjects spec.scaling renders. KEDA's
# Go module is not a dependency either (its API package would pull in KEDA's
# whole dependency tree and a newer Kubernetes), so it is fetched the same
# way at its pinned version.
KEDA_VERSION=v2.21.0
KEDA=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "github.com/kedacore/keda/v2@$KEDA_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
mkdir -p "$OUT/keda"
cp "$KEDA/config/crd/bases/keda.sh_scaledobjects.yaml" "$OUT/keda/"
# The bases CRD, not the chart's: the chart's carries a conversion webhook.
cp "$LWS/config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml" "$OUT/lws/"
chmod -R u+w "$OUT"
{
  echo "# Copied by hack/sync-crds.sh from the modules pinned in go.mod. Do not edit."
  go list -m -f '{{.Path}} {{.Version}}' sigs.k8s.io/gateway-api-inference-extension sigs.k8s.io/gateway-api sigs.k8s.io/lws
  echo "github.com/cert-manager/cert-manager $CERT_MANAGER_VERSION"
  echo "istio.io/api $ISTIO_API_VERSION"
  echo "github.com/prometheus-operator/prometheus-operator $PROMETHEUS_OPERATOR_VERSION"
  echo "github.com/kedacore/keda/v2 $KEDA_VERSION"
} > "$OUT/VERSIONS"
