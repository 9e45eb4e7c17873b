// Package chart tests charts/odh-serving and charts/odh-serving-crds with the
// real helm CLI (from bin/, on PATH) against a real kube-apiserver: lint and
// golden output for every ci/*-values.yaml, a server-side dry run of every
// rendered object, determinism, the values schema, and install, upgrade and
// uninstall in controller mode and in static mode (odh-serving post-render),
// and the odh-serving binary run as the chart's controller, with its args
// and as its ServiceAccount (exactly the chart's RBAC): its first pass over
// a service, and the README's uninstall path.
package chart
