// Package imagebuild builds the odh-serving controller image without a
// container engine: it cross-compiles the static binary for each platform
// (CGO_ENABLED=0, -trimpath, the version ldflags), lays it on a small root
// filesystem made from scratch (passwd and group entries for the nonroot user
// 65532, CA certificates, /tmp), joins the per-platform images in a
// multi-arch OCI index and writes it as an OCI image-layout archive with an
// SPDX 2.3 SBOM beside it.
//
// Every timestamp (tar entries, config, history, SBOM) is the source date,
// normally the commit time, so one commit gives one digest. `make image` runs
// it through hack/image; the Containerfile at the repository root builds the
// same layout on a distroless base for people with podman or docker.
package imagebuild
