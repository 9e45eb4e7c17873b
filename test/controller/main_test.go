package controllertest

import (
	"flag"
	"os"
	"runtime/debug"
	"strconv"
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

// testGOGC is the GOGC of the tests' processes unless GOGC is set: this
// binary (its controllers) and, through the environment they inherit,
// kube-apiserver, etcd and the cluster's processes. At Go's default of
// 100 about a fifth of kube-apiserver's CPU in this package went to
// collecting garbage; the tests trade memory for it. Benchmarks keep the
// default: they measure those processes' CPU and memory.
const testGOGC = 400

func TestMain(m *testing.M) {
	flag.Parse()
	if _, set := os.LookupEnv("GOGC"); !set && flag.Lookup("test.bench").Value.String() == "" {
		if err := os.Setenv("GOGC", strconv.Itoa(testGOGC)); err != nil {
			panic(err)
		}
		debug.SetGCPercent(testGOGC)
	}
	testenv.MainWithCluster(m, &cp, &nodes)
}
