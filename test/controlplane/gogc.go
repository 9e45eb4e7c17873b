package controlplane

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestGOGC is the GOGC that kube-apiserver and etcd run with in tests,
// unless GOGC is set: at Go's default of 100 about a fifth of
// kube-apiserver's CPU went to collecting garbage (the profile in the
// message of b1aab20), and the tests trade memory for it (kube-apiserver
// at about 0.95 GB instead of 0.48 GB in test/security). A package whose
// TestMain calls testenv.UseTestGOGC runs all its processes at it.
// Benchmarks (-test.bench set) and programs that are not tests, such as
// make demo's driver, keep Go's default: they measure or show these
// processes' CPU and memory as a cluster would have them.
const TestGOGC = 400

// envMu serialises the starts that set GOGC in this process's environment,
// so that each control plane's processes see the same value.
var envMu sync.Mutex

// withTestGOGC runs start, which starts kube-apiserver or etcd, with GOGC
// set to TestGOGC in the environment they inherit, and unsets it after.
// A process that another goroutine starts meanwhile inherits it too, which
// changes only how often that process collects garbage.
func withTestGOGC(start func() error) error {
	if !testing.Testing() || benchmarking(os.Args[1:]) {
		return start()
	}
	envMu.Lock()
	defer envMu.Unlock()
	if _, set := os.LookupEnv("GOGC"); set {
		return start()
	}
	if err := os.Setenv("GOGC", strconv.Itoa(TestGOGC)); err != nil {
		return fmt.Errorf("set GOGC for the control plane: %w", err)
	}
	defer func() { _ = os.Unsetenv("GOGC") }()
	return start()
}

// benchmarking reports whether a test binary's arguments ask for
// benchmarks. It reads the arguments, not the flag: TestMain starts the
// control plane before m.Run parses the flags.
func benchmarking(args []string) bool {
	for i, arg := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if name != "test.bench" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		return value != ""
	}
	return false
}
