// Package cli is the odh-serving command line: one cobra command per verb.
// The commands that need no cluster (render, post-render, version) are
// internal/cli/offline's, which cmd/odh-serving-render links alone; this
// package adds the ones that talk to a cluster or validate against the CRD
// schemas (controller, status, crds, presets) over the same root.
// Manifests go to Streams.Out and diagnostics to Streams.Err, so the output
// can be piped to kubectl or read by Helm as a post-renderer.
package cli
