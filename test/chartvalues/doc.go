// Package chartvalues fuzzes the path from charts/odh-serving's services
// values to rendered children: Helm's own template engine (helm.sh/helm/v3,
// the version the test binaries pin) renders the chart with random
// `services:` values, and what it writes is decoded and rendered as
// `odh-serving post-render --mode static` would. It has no TestMain and no
// control plane, so fuzz workers start fast.
package chartvalues
