// Package gitops checks docs/gitops.md: every YAML block parses strictly
// into the fields Argo CD and Kubernetes define, the Applications keep
// their promises (sync waves, sync options, ignore rules that match
// objects the charts render), the Config Management Plugin's generate
// script runs with real helm and odh-serving, and a real API server shows
// why the route weights are ignored by path and not by field manager.
// Argo CD itself is not available here, so nothing is applied to it.
package gitops
