// Package cli is the odh-serving command line: one cobra command per verb.
// Manifests go to Streams.Out and diagnostics to Streams.Err, so the output
// can be piped to kubectl or read by Helm as a post-renderer.
package cli
