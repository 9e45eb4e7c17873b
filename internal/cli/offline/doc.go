// Package offline is the part of the odh-serving command line that needs
// no cluster: render, post-render and version. It imports neither the
// controller nor the webhooks, client-go or the CRD validation, so
// cmd/odh-serving-render, which links only this package, starts in a few
// milliseconds: that binary is Helm's post-renderer (plugin/odh-serving).
// internal/cli adds the commands that talk to a cluster over the same
// root (Root).
//
// Manifests go to Streams.Out and diagnostics to Streams.Err, so the
// output can be piped to kubectl or read by Helm as a post-renderer.
package offline
