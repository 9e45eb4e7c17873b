// Package controlplane starts a real kube-apiserver and etcd (through
// controller-runtime's envtest) with every CRD odh-serving works with (or
// the sets a package names: each costs the API server CPU to install) and
// with odh-serving's own webhooks served in-process. Integration tests start
// one per test package in TestMain, through test/testenv.Main (MainWith).
//
// etcd, kube-apiserver and the webhook server listen on 127.0.0.1 at ports
// claimed for them (test/hostlock's ClaimPort) until Stop, not at envtest's:
// those it asks of the kernel and closes again, so any process of the
// machine could be handed one before etcd or kube-apiserver bound it.
//
// The binaries come from KUBEBUILDER_ASSETS, which `make test` points at the
// build of hack/setup-test-assets.sh. A missing variable is an error, never a
// skip, so a CI run without the control plane fails instead of passing empty.
package controlplane
