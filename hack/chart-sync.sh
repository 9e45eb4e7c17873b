#!/usr/bin/env bash
# Copies what the charts ship from its one source in the repository:
#   presets/<name>/preset.yaml -> charts/odh-serving/files/presets/<name>.yaml
#   presets/images.yaml        -> charts/odh-serving/files/presets/images.yaml
#   api/crds (ours, GIE, Gateway API, LWS) -> charts/odh-serving-crds/files/<set>/
#                                 (Gateway API and LWS without descriptions)
#   VERSION                    -> version and appVersion of both Chart.yaml
#                                 (the controller image's tag defaults to appVersion)
# The templates emit these files with .Files.Get, so Helm never interprets
# the {{ }} in presets. `make verify` runs this and fails on drift.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

version=$(tr -d '[:space:]' < VERSION)
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "VERSION: \"$version\" is not a semantic version (X.Y.Z or X.Y.Z-pre)" >&2; exit 1
fi
for chart in charts/odh-serving charts/odh-serving-crds; do
  sed -i -E "s/^version: .*/version: $version/; s/^appVersion: .*/appVersion: \"$version\"/" "$chart/Chart.yaml"
done

presets=charts/odh-serving/files/presets
rm -rf "$presets"
mkdir -p "$presets"
for dir in presets/*/; do
  name=$(basename "$dir")
  [[ -f "$dir/preset.yaml" ]] && cp "$dir/preset.yaml" "$presets/$name.yaml"
done
cp presets/images.yaml "$presets/images.yaml"

crds=charts/odh-serving-crds/files
rm -rf "$crds"
mkdir -p "$crds/serving" "$crds/gie" "$crds/gateway-api" "$crds/lws"
cp api/crds/serving.kserve.io_*.yaml "$crds/serving/"
cp api/crds/thirdparty/gie/*.yaml "$crds/gie/"
cp api/crds/thirdparty/gateway-api/*.yaml "$crds/gateway-api/"
cp api/crds/thirdparty/lws/*.yaml "$crds/lws/"
cp api/crds/thirdparty/VERSIONS "$crds/VERSIONS"
# Helm keeps a release, with its chart's files, in one Secret of at most 1 MiB:
# the chart's Gateway API and LWS CRDs go without descriptions (hack/crdschemas).
CGO_ENABLED=0 go run ./hack/crdschemas -slim "$crds"/gateway-api/*.yaml "$crds"/lws/*.yaml
chmod -R u+w "$presets" "$crds"
