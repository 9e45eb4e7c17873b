// Package plugin tests the Helm 4 post-renderer plugin in plugin/odh-serving
// with a real Helm 4 (helm4 of hack/setup-test-assets.sh, built from the
// module proxy): the plugin installs from its folder, and helm4 template,
// install and upgrade with --post-renderer odh-serving expand the chart's
// services against a real API server. A helm upgrade, with Helm 4's plugin
// and with Helm 3's post-renderer executable, leaves an autoscaled
// workload's replicas to its HPA.
package plugin
