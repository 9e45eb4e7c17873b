package controllertest

import (
	"testing"

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

func TestMain(m *testing.M) { testenv.MainWithCluster(m, &cp, &nodes) }
