// Package overlays tests the kustomize overlays under overlays/ over the
// real charts: helm template of odh-serving-crds and odh-serving, each
// overlay applied in memory as post-render --overlay does, compared with
// overlays/<name>/expected.yaml and with the real kustomize CLI's build,
// checked for what the overlay promises, and applied to a real API server
// as a server-side dry run.
package overlays
