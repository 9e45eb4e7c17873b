// Package controllertest tests the odh-serving controller against a real
// kube-apiserver and etcd (test/controlplane). No gateway, workload or
// LeaderWorkerSet controllers run: the tests write the status those would
// write. Each test runs its own controller, limited to a namespace of its
// own and with a system namespace of its own, so tests do not see each
// other's services. BenchmarkConverge measures how fast many services
// converge and how many writes they take.
package controllertest
