// Package localcluster runs a kube-apiserver and etcd on loopback as a local
// cluster that outlives the program that started it: the demo (`make demo`)
// and anyone who wants a throwaway API server to point `kubectl`, `helm` or
// `odh-serving controller` at.
//
// It reuses controller-runtime's envtest control plane (the binaries come from
// hack/setup-test-assets.sh) but installs no CRDs and no webhooks: whoever uses
// the cluster installs them, the demo with helm. Two ways to run it:
//
//   - Start runs the control plane inside the calling process; Stop ends it.
//     Tests use this.
//   - Up starts a detached supervisor process (a command that calls Serve),
//     waits until the API server answers and returns; Down, from any process,
//     stops it through the state file in the cluster's folder. The demo and
//     `go run ./test/demo devcluster up|down` use this.
//
// The folder (bin/demo for the demo) holds the kubeconfig, the state file
// (pids and URLs), the logs of etcd and kube-apiserver, the etcd data and the
// API server's certificates. Every Start begins with an empty etcd.
//
// The API server differs from envtest's defaults in three ways: the service
// CIDR is /12 (test/controlplane.ServiceCIDR) instead of /24; it is the front
// proxy of aggregated API servers, such as the MaaS API server
// (controlplane.FrontProxy: request-header CA and proxy client certificate in
// the pki folder); and aggregator routing is on, so the API server reaches
// webhook, conversion and aggregated API Services through their
// EndpointSlices. There is no kube-proxy, so a ClusterIP leads nowhere; an
// EndpointSlice can point at a process on this machine.
//
// It is the API server alone: test/kwokcluster can add kube-scheduler,
// kube-controller-manager, the LeaderWorkerSet operator and kwok's
// simulated nodes, so that Deployments and LeaderWorkerSets get
// ReplicaSets, StatefulSets and Pods that run; test/gateway serves the
// Gateways.
package localcluster
