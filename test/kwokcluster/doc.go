// Package kwokcluster turns a bare API server (test/controlplane,
// test/localcluster) into a cluster whose workloads run: it starts, as
// processes on this machine,
//
//   - kube-scheduler, which places pods on nodes;
//   - kube-controller-manager with the controllers that turn Deployments,
//     StatefulSets and Jobs into ReplicaSets and Pods and report their
//     status, collect garbage, finalize namespaces, publish EndpointSlices,
//     run HorizontalPodAutoscalers, make ServiceAccounts and watch node
//     health (Controllers lists them); it and kube-scheduler may send
//     ClientQPS requests a second, not their defaults' 20 a controller and
//     50, so that the API server's CPU, not the clients, sets the pace;
//   - kwok (sigs.k8s.io/kwok), which plays the kubelet of every node: it
//     keeps the nodes Ready (renewing their Leases, NodeLeaseSeconds) and
//     takes each scheduled pod to Running and Ready with a pod IP, or
//     deletes it once it is marked for deletion;
//   - with Options.LWS, the LeaderWorkerSet operator (sigs.k8s.io/lws, its
//     manager built as lws-controller), which turns each LeaderWorkerSet
//     into a leader StatefulSet and a worker StatefulSet per group and
//     reports its status. Its webhooks are installed as upstream's
//     (lws/webhooks-v0.8.0.yaml: a pod webhook labels each leader and
//     worker pod with its group, worker index and group hash, a
//     LeaderWorkerSet webhook defaults the spec), called at a URL on
//     127.0.0.1 with a certificate PrepareLWS makes (the operator's own
//     certificate rotation needs its Service and Secret in a cluster).
//     It runs as cfg's user, like the other processes, not with its
//     ClusterRole. The LeaderWorkerSet CRD must be installed first;
//
// and registers simulated nodes (DefaultNodes: four with eight NVIDIA GPUs
// each, two with CPUs only), all named kwok-… and labelled type=kwok. No
// container runs: a Running pod is a status kwok wrote. Pods request GPUs
// as rendered, and the real scheduler places them or reports why not.
//
// The stages kwok plays are in stages/: kwok v0.7.0's defaults, copied
// unchanged, and odh-serving's faults (faults.yaml), which a test or the
// demo triggers by naming one of ImagePullFails, CrashLoop and NeverReady
// as a container's image.
//
// Pod IPs come from a loopback /16 (Cluster.PodCIDR), so a later test can
// listen on a pod's address on this machine. Each cluster claims a range
// no other live cluster on this machine holds (ClaimPodRange: the first
// free one of 127.1.0.0/16 to 127.99.0.0/16, an flock on a lock file per
// range in the temporary folder, given up by Stop or when the process
// ends), so that test packages run in parallel, and the demo beside them,
// never hand out the same addresses: their model servers would answer each
// other's requests. The API server rejects loopback addresses in
// EndpointSlices, so the EndpointSlice controller cannot publish these
// pods: a Service here has no endpoints, and no test may depend on them.
// kwok (v0.7.0 as v0.8.0) makes its pool of pod IPs at the first pod it
// plays, with nothing ordering two first pods played at once: both can get
// the pool's first IP. So Start (Wait) has kwok run one pod alone before
// it returns.
//
// Use:
//
//	c, err := kwokcluster.Start(cfg, kwokcluster.Options{})  // once per test package
//	defer c.Stop()
//
// The binaries come from Options.AssetsDir or $KUBEBUILDER_ASSETS: the
// folder `hack/setup-test-assets.sh cluster` prints. Start takes about two
// seconds on an idle 2-core machine, and about one more with the
// LeaderWorkerSet operator. The processes are ended with the one
// that started them (on Linux, even when it is killed).
//
// This is test tooling. engine/ and internal/ never import it.
package kwokcluster
