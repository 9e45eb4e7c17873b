package controllertest

import (
	"flag"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var (
	cp *controlplane.ControlPlane
	// nodes is the cluster's workload half (test/kwokcluster, with the
	// LeaderWorkerSet operator), started by the first test's env (newEnv);
	// BenchmarkConverge runs without it.
	nodes = testenv.Cluster{LWS: true}
)

// allowedHostnames are the route hostnames the tests' platform allows
// (--route-allowed-hostnames): the webhook and every test controller
// judge routes with them.
var allowedHostnames = []string{"llm.example.com", "preset.example.com"}

// TestMain runs the tests' processes (this binary's controllers,
// kube-apiserver, etcd and the cluster's) at testenv's GOGC, unless GOGC
// is set or benchmarks run.

func TestMain(m *testing.M) {
	flag.Parse()
	testenv.UseTestGOGC()
	testenv.MainWith(m, &cp, controlplane.Options{
		Validator: webhook.Validator{Options: engine.Options{AllowedHostnames: allowedHostnames}},
	}, &nodes)
}
