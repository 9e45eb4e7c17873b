#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kubectl) and the helm (v3), helm4 and
# kustomize CLIs from the Go module proxy, into bin/k8s-<version>-<hash>/ under the repository root.
# A stamp file makes a second run free. Prints only the asset directory on stdout; progress
# and timings go to stderr.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K8S_VERSION=1.34.4          # must match hack/k8s-assets/go.mod
HELM_VERSION=v3.19.5        # same as helm.sh/helm/v3 in the root go.mod
HELM4_VERSION=v4.3.1        # helm.sh/helm/v4, installed as helm4 (post-renderer plugin tests)
KUSTOMIZE_VERSION=v5.8.1    # = kustomize/api v0.21.1; v5.8.3 needs go >= 1.27
MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
SUMS=$(cat "$ROOT/hack/k8s-assets/go.mod" "$ROOT/hack/k8s-assets/go.sum" "$0" | sha256sum | cut -c1-12)
STAMP="k8s=$K8S_VERSION helm=$HELM_VERSION helm4=$HELM4_VERSION kustomize=$KUSTOMIZE_VERSION $(go env GOVERSION) $SUMS"
OUT=${TEST_ASSETS_DIR:-$ROOT/bin/k8s-$K8S_VERSION-$SUMS}
if [[ -f "$OUT/.stamp" && "$(cat "$OUT/.stamp")" == "$STAMP" ]]; then echo "$OUT"; exit 0; fi
{
  mkdir -p "$OUT"; t0=$SECONDS
  KLDF="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$MINOR"
  ( cd "$ROOT/hack/k8s-assets" && go build -ldflags "$KLDF" -o "$OUT/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl ./etcd )
  echo "test-assets: etcd+kube-apiserver+kubectl built in $((SECONDS-t0))s"; t1=$SECONDS
  HLDF="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$MINOR -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$MINOR"
  GOBIN="$OUT" GOFLAGS=-mod=mod go install -ldflags "$HLDF" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  echo "test-assets: helm built in $((SECONDS-t1))s"; t2=$SECONDS
  GOBIN="$OUT" GOFLAGS=-mod=mod go install -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  echo "test-assets: kustomize built in $((SECONDS-t2))s"; t3=$SECONDS
  GOBIN="$OUT/helm4.d" GOFLAGS=-mod=mod go install -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM4_VERSION" \
    "helm.sh/helm/v4/cmd/helm@$HELM4_VERSION"
  mv "$OUT/helm4.d/helm" "$OUT/helm4" && rmdir "$OUT/helm4.d"
  echo "test-assets: helm4 built in $((SECONDS-t3))s"
  "$OUT/etcd" --version | sed -n 1p; "$OUT/kube-apiserver" --version; "$OUT/kubectl" version --client | sed -n 1p
  "$OUT/helm" version --short; "$OUT/helm4" version --short; "$OUT/kustomize" version
  echo "$STAMP" > "$OUT/.stamp"; echo "test-assets: ready in $((SECONDS-t0))s: $OUT"
} >&2
echo "$OUT"
