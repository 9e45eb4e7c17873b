// Package controllertest tests the odh-serving controller against a real
// kube-apiserver and etcd (test/controlplane), with the cluster's workload
// half (test/kwokcluster): kube-scheduler, kube-controller-manager, the
// LeaderWorkerSet operator and kwok's simulated nodes run the services'
// Deployments and LeaderWorkerSets. No gateway runs: the tests write the
// status it would write. Each test runs its own controller, limited to a namespace of its
// own and with a system namespace of its own, so tests do not see each
// other's services. BenchmarkConverge measures how fast many services
// converge and how many writes they take.
package controllertest
