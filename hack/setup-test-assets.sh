#!/usr/bin/env bash
# Builds, once, the binaries that the tests and the demo run, into bin/k8s-<version>-<hash>/ under
# the repository root, and prints only that folder on stdout. Progress, timings and what was
# reused from where go to stderr; the `go` output of each build goes to bin/test-assets.log,
# whose last lines are printed if a build fails.
#
#   hack/setup-test-assets.sh [test|demo|cluster|requests|NAME...]
#     test (default)  the cluster, helm, helm4, kustomize and epp: what `make test` runs
#     demo            the cluster, helm and epp: what `make demo` runs
#     cluster         etcd kube-apiserver kube-scheduler kube-controller-manager kwok lws-controller:
#                     the cluster with simulated GPU nodes and the LeaderWorkerSet operator
#                     (test/kwokcluster)
#     requests        the cluster and epp: what the tests that send requests through GIE's
#                     endpoint picker run. epp (GIE's cmd/epp at the version go.mod requires, built
#                     in the root module like helm) is a NAME too.
#     NAME            any of etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok
#                     lws-controller helm helm4 kustomize. No test and no make target runs kubectl, so no set
#                     builds it; `DEMO_KEEP=1 make demo` asks for it.
#
# Every binary has its own stamp (.stamp-NAME), so the demo's binaries are reused by the test set.
# A binary not stamped yet is first looked for, with a matching version, in $KUBEBUILDER_ASSETS,
# setup-envtest's cache and $PATH, and linked or copied in; only then is it built from the Go
# module proxy: etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kubectl in the
# nested module hack/k8s-assets (which requires every module it shares with odh-serving at
# odh-serving's version, so both compile those packages once: client-go, the API types, the API
# server library; make verify checks it), kwok in the nested module hack/kwok-assets (the same: it
# requires odh-serving's versions), helm and lws-controller (the LeaderWorkerSet operator's manager, sigs.k8s.io/lws's
# cmd at the version go.mod requires) in the root module (the same libraries odh-serving uses, so
# they share its build cache), helm 4 and kustomize with `go install`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K8S_VERSION=1.34.4          # must match hack/k8s-assets/go.mod
ETCD_VERSION=3.6.4          # what k8s.io/kubernetes v1.34.4 pins (hack/k8s-assets/go.sum)
HELM_VERSION=$(awk '$1 == "helm.sh/helm/v3" { print $2; exit }' "$ROOT/go.mod")
[[ -n $HELM_VERSION ]] || { echo "test-assets: no helm.sh/helm/v3 in go.mod" >&2; exit 1; }
LWS_VERSION=$(awk '$1 == "sigs.k8s.io/lws" { print $2; exit }' "$ROOT/go.mod")
[[ -n $LWS_VERSION ]] || { echo "test-assets: no sigs.k8s.io/lws in go.mod" >&2; exit 1; }
HELM4_VERSION=v4.3.1        # helm.sh/helm/v4, installed as helm4 (post-renderer plugin tests)
KUSTOMIZE_VERSION=v5.8.1    # = kustomize/api v0.21.1; v5.8.3 needs go >= 1.27
KWOK_VERSION=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kwok" { print $3; exit }' "$ROOT/hack/kwok-assets/go.mod")
[[ -n $KWOK_VERSION ]] || { echo "test-assets: no sigs.k8s.io/kwok in hack/kwok-assets/go.mod" >&2; exit 1; }
KWOK_SUMS=$(cat "$ROOT/hack/kwok-assets/go.mod" "$ROOT/hack/kwok-assets/go.sum" | sha256sum | cut -c1-12)
MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
SUMS=$(cat "$ROOT/hack/k8s-assets/go.mod" "$ROOT/hack/k8s-assets/go.sum" | sha256sum | cut -c1-12)
# The folder is named for both nested modules: worktrees that pin another kwok (whose stages differ
# between versions) build theirs in a folder of their own instead of replacing each other's.
OUT=${TEST_ASSETS_DIR:-$ROOT/bin/k8s-$K8S_VERSION-$(echo "$SUMS $KWOK_SUMS" | sha256sum | cut -c1-12)}
LOG=$ROOT/bin/test-assets.log
GOVER=$(go env GOVERSION)
# Every build here is static and path-free, as make's are (the Makefile exports CGO_ENABLED=0 and
# -trimpath), whoever runs the script: the Go build cache keys a compiled package by these too, so
# only then do these builds, odh-serving's, the demo's and the tests' compile the packages they
# share once.
export CGO_ENABLED=0
[[ " ${GOFLAGS:-} " == *" -trimpath "* ]] || export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"

CLUSTER_SET="etcd kube-apiserver kube-scheduler kube-controller-manager kwok lws-controller"
DEMO_SET="$CLUSTER_SET helm epp"
TEST_SET="$CLUSTER_SET helm helm4 kustomize"
ALL="etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok lws-controller helm helm4 kustomize"
REQUESTS_SET="$CLUSTER_SET epp"
TEST_SET+=" epp" # test/requests runs it
ALL+=" epp"
GIE_VERSION=$(awk '$1 == "sigs.k8s.io/gateway-api-inference-extension" { print $2; exit }' "$ROOT/go.mod")
[[ -n $GIE_VERSION ]] || { echo "test-assets: no sigs.k8s.io/gateway-api-inference-extension in go.mod" >&2; exit 1; }
ELDF="-s -w -X sigs.k8s.io/gateway-api-inference-extension/version.BuildRef=$GIE_VERSION"
usage() { echo "usage: hack/setup-test-assets.sh [test|demo|cluster|requests|NAME...]; NAME is one of: $ALL" >&2; exit 2; }
WANT=()
for a in "${@:-test}"; do
  case $a in
    requests) WANT+=($REQUESTS_SET) ;;
    test) WANT+=($TEST_SET) ;;
    demo) WANT+=($DEMO_SET) ;;
    cluster) WANT+=($CLUSTER_SET) ;;
    -h|--help) usage ;;
    *) [[ " $ALL " == *" $a "* ]] || usage; WANT+=("$a") ;;
  esac
done

KLDF="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$MINOR"
HLDF="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$MINOR -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$MINOR"
H4LDF="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM4_VERSION"
LLDF="-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=$LWS_VERSION"

# The stamp of a binary: what it is and how it is built (a new Go rebuilds it too). A different
# stamp rebuilds, or re-reuses, that binary.
stamp() {
  case $1 in
    etcd|kube-apiserver|kube-scheduler|kube-controller-manager|kubectl) echo "$1 k8s=$K8S_VERSION $SUMS $GOVER $KLDF" ;;
    kwok) echo "kwok $KWOK_VERSION $KWOK_SUMS $GOVER -s -w informer-without-list-blueprint" ;;
    lws-controller) echo "lws-controller $LWS_VERSION root-module $GOVER $LLDF" ;;
    helm) echo "helm $HELM_VERSION root-module $GOVER $HLDF" ;;
    helm4) echo "helm4 $HELM4_VERSION $GOVER $H4LDF" ;;
    kustomize) echo "kustomize $KUSTOMIZE_VERSION $GOVER -s -w" ;;
    epp) echo "epp $GIE_VERSION root-module $GOVER $ELDF" ;;
  esac
}
fresh() { [[ -x "$OUT/$1" && -f "$OUT/.stamp-$1" && "$(cat "$OUT/.stamp-$1")" == "$(stamp "$1")" ]]; }

MISSING=()
for b in "${WANT[@]}"; do
  fresh "$b" || [[ " ${MISSING[*]} " == *" $b "* ]] || MISSING+=("$b")
done
if [[ ${#MISSING[@]} -eq 0 ]]; then echo "$OUT"; exit 0; fi

# The version a binary reports, and the versions accepted from elsewhere: the same etcd and
# Kubernetes minor, the exact helm, helm 4 and kustomize.
version_of() {
  case $1 in
    etcd) timeout 10 "$2" --version 2>/dev/null | sed -n 's/^etcd Version: //p' ;;
    kube-apiserver|kube-scheduler|kube-controller-manager) timeout 10 "$2" --version 2>/dev/null | sed -n 's/^Kubernetes v//p' ;;
    kwok) timeout 10 "$2" --version 2>/dev/null | sed -n 's/^kwok version v\([^ ]*\).*/v\1/p' ;;
    lws-controller) timeout 10 "$2" --version 2>/dev/null | sed -n 's/^Version: //p' ;;
    kubectl) timeout 10 "$2" version --client 2>/dev/null | sed -n 's/^Client Version: v//p' ;;
    helm|helm4) timeout 10 "$2" version --short 2>/dev/null | sed 's/+.*//' ;;
    kustomize) timeout 10 "$2" version 2>/dev/null | sed 's/^{Version:kustomize\///; s/ .*//' ;;
    epp) [[ $2 == "$OUT/epp" ]] && echo "$GIE_VERSION" ;; # no --version: only the one built here
  esac
}
accepted() {
  case $1 in
    etcd) [[ $2 == "${ETCD_VERSION%.*}".* ]] ;;
    kube-apiserver|kube-scheduler|kube-controller-manager|kubectl) [[ $2 == "${K8S_VERSION%.*}".* ]] ;;
    kwok) [[ $2 == "$KWOK_VERSION" ]] ;;
    lws-controller) [[ $2 == "$LWS_VERSION" ]] ;;
    helm) [[ $2 == "$HELM_VERSION" ]] ;;
    helm4) [[ $2 == "$HELM4_VERSION" ]] ;;
    kustomize) [[ $2 == "$KUSTOMIZE_VERSION" ]] ;;
  esac
}
# Where a matching binary may already be: $KUBEBUILDER_ASSETS, setup-envtest's cache (Linux and
# macOS locations, newest patch release first) and $PATH.
candidates() {
  local b=$1 os arch d
  [[ -n ${KUBEBUILDER_ASSETS:-} ]] && echo "\$KUBEBUILDER_ASSETS|$KUBEBUILDER_ASSETS/$b"
  case $b in
    etcd|kube-apiserver|kube-scheduler|kube-controller-manager|kubectl)
      os=$(uname -s | tr '[:upper:]' '[:lower:]'); arch=$(uname -m)
      case $arch in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; esac
      for d in "${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest/k8s" \
               "$HOME/Library/Application Support/io.kubebuilder.envtest/k8s"; do
        [[ -d $d ]] || continue
        find "$d" -maxdepth 1 -name "${K8S_VERSION%.*}.*-$os-$arch" 2>/dev/null | sort -rV | sed "s|^|setup-envtest's cache\||; s|\$|/$b|"
      done ;;
  esac
  d=$(type -P "$b" || true); [[ -z $d ]] || echo "\$PATH|$d"
}
reuse() {
  local b=$1 c src v from
  while IFS='|' read -r from c; do
    [[ -x $c && ! -d $c ]] || continue
    src=$(readlink -f "$c")
    [[ $src != "$(readlink -f "$OUT")/"* ]] || continue
    v=$(version_of "$b" "$src" | sed -n 1p)
    if [[ -n $v ]] && accepted "$b" "$v"; then
      rm -f "$OUT/$b"
      ln "$src" "$OUT/$b" 2>/dev/null || cp "$src" "$OUT/$b"
      stamp "$b" > "$OUT/.stamp-$b"
      echo "test-assets: $b $v: reusing $c (from $from)"
      return 0
    fi
    echo "test-assets: $b: not reusing $c (from $from): version ${v:-unknown}, want $(want_text "$b")"
  done < <(candidates "$b")
  return 1
}
want_text() {
  case $1 in
    etcd) echo "${ETCD_VERSION%.*}.x" ;; kube-apiserver|kube-scheduler|kube-controller-manager|kubectl) echo "${K8S_VERSION%.*}.x" ;;
    kwok) echo "$KWOK_VERSION" ;; lws-controller) echo "$LWS_VERSION" ;;
    helm) echo "$HELM_VERSION" ;; helm4) echo "$HELM4_VERSION" ;; kustomize) echo "$KUSTOMIZE_VERSION" ;;
  esac
}

# run LABEL ESTIMATE DIR CMD...: runs a build with its output in $LOG, says what it builds, how
# long that took the first time here, a line a minute while it runs, and what it took.
run() {
  local label=$1 estimate=$2 dir=$3 t=$SECONDS pid rc next=$((SECONDS + 60)); shift 3
  echo "test-assets: building $label from the Go module proxy; the first time on a 2-core machine takes about $estimate (go's output: ${LOG#"$ROOT"/})"
  echo "=== $(date -u +%FT%TZ) $label: (cd $dir && $*)" >> "$LOG"
  ( cd "$dir" && exec "$@" ) >> "$LOG" 2>&1 & pid=$!
  trap 'kill $pid 2>/dev/null' INT TERM
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if (( SECONDS >= next )); then echo "test-assets:   still building $label, $((SECONDS - t))s so far"; next=$((next + 60)); fi
  done
  if wait "$pid"; then rc=0; else rc=$?; fi
  trap - INT TERM
  if [[ $rc -ne 0 ]]; then
    echo "test-assets: building $label FAILED after $((SECONDS - t))s; the end of $LOG:"
    awk '/^=== / { n = 0 } !/^go: downloading/ { last[n++] = $0 } END { for (i = (n > 30 ? n - 30 : 0); i < n; i++) print last[i] }' "$LOG"
    exit "$rc"
  fi
  echo "test-assets: $label built in $((SECONDS - t))s"
}

{
  mkdir -p "$OUT" "$(dirname "$LOG")"; t0=$SECONDS
  if command -v flock >/dev/null; then
    exec 9>"$OUT/.lock"
    flock -n 9 || { echo "test-assets: waiting for another setup-test-assets.sh on $OUT"; flock 9; }
  fi
  : > "$LOG"
  BUILD=()
  for b in "${MISSING[@]}"; do
    fresh "$b" || reuse "$b" || BUILD+=("$b")
  done
  has() { [[ " ${BUILD[*]} " == *" $1 "* ]]; }
  # etcd and the Kubernetes binaries: one `go build`, which compiles their shared packages once.
  # The first-time estimates were measured on the project's 2-core machine with empty Go caches
  # (kube-scheduler's and kube-controller-manager's: what each adds to a kube-apiserver build).
  K8S=(); NAMES=(); KEST=0
  if has etcd; then K8S+=(./etcd); NAMES+=(etcd); KEST=$((KEST + 1)); fi
  if has kube-apiserver; then K8S+=(k8s.io/kubernetes/cmd/kube-apiserver); NAMES+=(kube-apiserver); KEST=$((KEST + 5)); fi
  if has kube-scheduler; then K8S+=(k8s.io/kubernetes/cmd/kube-scheduler); NAMES+=(kube-scheduler); KEST=$((KEST + 1)); fi
  if has kube-controller-manager; then K8S+=(k8s.io/kubernetes/cmd/kube-controller-manager); NAMES+=(kube-controller-manager); KEST=$((KEST + 2)); fi
  if has kubectl; then K8S+=(k8s.io/kubernetes/cmd/kubectl); NAMES+=(kubectl); KEST=$((KEST + 1)); fi
  if [[ ${#K8S[@]} -gt 0 ]]; then
    label=${NAMES[0]}
    for ((i = 1; i < ${#NAMES[@]}; i++)); do
      if ((i == ${#NAMES[@]} - 1)); then label+=" and ${NAMES[i]}"; else label+=", ${NAMES[i]}"; fi
    done
    run "$label" "$KEST min with nothing compiled before, about half that once odh-serving is (they share its client-go and API server packages)" "$ROOT/hack/k8s-assets" go build -ldflags "$KLDF" -o "$OUT/" "${K8S[@]}"
    for b in "${NAMES[@]}"; do stamp "$b" > "$OUT/.stamp-$b"; done
  fi
  if has kwok; then
    # hack/kwok-assets requires every module kwok shares with odh-serving at odh-serving's version
    # (and the kubelet's API modules at hack/k8s-assets'), so of kwok's 761 packages outside the
    # standard library about 80 are its own and the rest come from the build cache (make verify
    # checks the drift). kwok v0.7.0 was written against k8s.io v0.33: its informer reads
    # metav1.InitialEventsListBlueprintAnnotationKey, which apimachinery v0.34 dropped. So it is
    # built from a copy of its module with kwok's own change for v0.34 (upstream commit 3e07a77,
    # "Bump k8s to 1.34", which deletes the four lines that check that annotation), through a
    # replace in a copy of go.mod: the tree's go.mod stays as it is.
    KW=$OUT/.kwok-build
    rm -rf "$KW"; mkdir -p "$KW"; cp "$ROOT/hack/kwok-assets/go.mod" "$ROOT/hack/kwok-assets/go.sum" "$KW/"
    KDIR=$(cd "$ROOT/hack/kwok-assets" && go mod download sigs.k8s.io/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
    cp -R "$KDIR" "$KW/kwok"; chmod -R u+w "$KW/kwok"
    INF=pkg/utils/informer/informer.go
    if ! awk '/base64EncodedInitialEventsListBlueprint :=/ { skip = 4 } skip > 0 { skip--; cut++; next } { print } END { exit cut != 4 }' "$KDIR/$INF" > "$KW/kwok/$INF" ||
       grep -q InitialEventsListBlueprintAnnotationKey "$KW/kwok/$INF"; then
      echo "test-assets: kwok $KWOK_VERSION: $INF is not the one expected (the four lines that read metav1.InitialEventsListBlueprintAnnotationKey, gone from k8s.io/apimachinery v0.34); see hack/kwok-assets/tools.go"
      exit 1
    fi
    go mod edit -modfile "$KW/go.mod" -replace "sigs.k8s.io/kwok=$KW/kwok"
    run "kwok $KWOK_VERSION" "30 s once odh-serving and the Kubernetes binaries are built (they share all but about 80 of its packages)" "$ROOT/hack/kwok-assets" \
      go build -modfile "$KW/go.mod" -ldflags "-s -w" -o "$OUT/kwok" sigs.k8s.io/kwok/cmd/kwok
    rm -rf "$KW"; stamp kwok > "$OUT/.stamp-kwok"
  fi
  if has lws-controller; then
    # The LeaderWorkerSet operator's manager, built like helm with a copy of the root go.mod (it
    # needs go.sum lines odh-serving does not: open-policy-agent/cert-controller, volcano's API),
    # so it shares odh-serving's k8s.io and controller-runtime packages in the build cache.
    MODF=$OUT/.lws-mod/go.mod
    mkdir -p "$(dirname "$MODF")"; cp "$ROOT/go.mod" "$MODF"; cp "$ROOT/go.sum" "${MODF%.mod}.sum"
    run "lws-controller (LeaderWorkerSet $LWS_VERSION)" "20 s once odh-serving is built, 4 min without (7 min of CPU)" "$ROOT" \
      go build -modfile "$MODF" -mod=mod -ldflags "$LLDF" -o "$OUT/lws-controller" sigs.k8s.io/lws/cmd
    rm -rf "$(dirname "$MODF")"; stamp lws-controller > "$OUT/.stamp-lws-controller"
  fi
  if has helm; then
    # The root module's helm, built with a copy of its go.mod (the helm CLI needs a few go.sum
    # lines the library does not), so the tree's go.mod and go.sum stay as they are.
    MODF=$OUT/.helm-mod/go.mod
    mkdir -p "$(dirname "$MODF")"; cp "$ROOT/go.mod" "$MODF"; cp "$ROOT/go.sum" "${MODF%.mod}.sum"
    run "helm $HELM_VERSION" "20 s once odh-serving is built, 2 min without" "$ROOT" \
      go build -modfile "$MODF" -mod=mod -ldflags "$HLDF" -o "$OUT/helm" helm.sh/helm/v3/cmd/helm
    rm -rf "$(dirname "$MODF")"; stamp helm > "$OUT/.stamp-helm"
  fi
  if has kustomize; then
    run "kustomize $KUSTOMIZE_VERSION" "20 s" "$ROOT" \
      env GOBIN="$OUT" GOFLAGS="$GOFLAGS -mod=mod" go install -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
    stamp kustomize > "$OUT/.stamp-kustomize"
  fi
  if has helm4; then
    run "helm4 $HELM4_VERSION" "3 min" "$ROOT" \
      env GOBIN="$OUT/helm4.d" GOFLAGS="$GOFLAGS -mod=mod" go install -ldflags "$H4LDF" "helm.sh/helm/v4/cmd/helm@$HELM4_VERSION"
    mv "$OUT/helm4.d/helm" "$OUT/helm4" && rmdir "$OUT/helm4.d"
    stamp helm4 > "$OUT/.stamp-helm4"
  fi
  if has epp; then
    # GIE's endpoint picker, from the GIE module go.mod requires, built like helm with a copy of
    # the root go.mod (it needs go.sum lines odh-serving does not: envoy's go-control-plane and
    # more), so it shares odh-serving's k8s.io packages in the build cache. It has no --version,
    # so one found elsewhere is never reused.
    MODF=$OUT/.epp-mod/go.mod
    mkdir -p "$(dirname "$MODF")"; cp "$ROOT/go.mod" "$MODF"; cp "$ROOT/go.sum" "${MODF%.mod}.sum"
    run "epp (GIE $GIE_VERSION)" "26 min at load 40 (3 min of CPU); 25 s once built before" "$ROOT" \
      go build -modfile "$MODF" -mod=mod -ldflags "$ELDF" -o "$OUT/epp" sigs.k8s.io/gateway-api-inference-extension/cmd/epp
    rm -rf "$(dirname "$MODF")"; stamp epp > "$OUT/.stamp-epp"
  fi
  if [[ ${#BUILD[@]} -gt 0 ]]; then
    vs=$(for b in "${BUILD[@]}"; do printf '%s %s, ' "$b" "$(version_of "$b" "$OUT/$b" | sed -n 1p)"; done)
    echo "test-assets: ${vs%, }"
  fi
  echo "test-assets: ready in $((SECONDS - t0))s: $OUT"
} >&2
echo "$OUT"
