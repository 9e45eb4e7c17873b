package controller_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func init() { testenv.InitLogger() }

// BenchmarkReconcileNoop measures one reconcile of a service whose
// children and status are already what it renders: the pass every resync
// and every unrelated event costs. The controller runs against a local
// kube-apiserver (KUBEBUILDER_ASSETS; skipped without), converges the
// service, and the benchmark then calls its reconciler directly, reading
// everything from the cache. It reports the process's CPU per reconcile
// (cpu-ns/op, steadier than ns/op on a busy host), and fails if a pass
// wrote.
func BenchmarkReconcileNoop(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set: see hack/setup-test-assets.sh")
	}
	cp := testenv.StartControlPlane(b, controlplane.Options{})
	ns := testenv.NewNamespace(b, cp.Client, "bench")
	sys := testenv.NewNamespace(b, cp.Client, "benchsys")
	rec := &testenv.Recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	r, done, err := controller.StartReconciler(ctx, rec.Config(cp.Config), controller.Options{
		Options: engine.Options{SystemNamespace: sys}, WatchNamespaces: []string{ns}, DisableWebhooks: true,
		MetricsBindAddress: "0", HealthProbeBindAddress: "0",
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	svc := &v1alpha2.LLMInferenceService{}
	if err := yaml.UnmarshalStrict([]byte(testenv.PrefillDecodeService), svc); err != nil {
		b.Fatal(err)
	}
	svc.Namespace = ns
	if err := cp.Client.Create(ctx, svc); err != nil {
		b.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: svc.Name}}
	// Converged: three passes in a row that write nothing, the cache
	// having seen the writes before them.
	quiet := 0
	for deadline := time.Now().Add(2 * time.Minute); quiet < 3; {
		if time.Now().After(deadline) {
			b.Fatalf("the service did not converge within 2 minutes; writes: %v", rec.Since(0))
		}
		before := rec.Count()
		_, err := r.Reconcile(ctx, req)
		switch {
		case apierrors.IsConflict(err):
			// The controller's own worker wrote the status first.
			quiet = 0
		case err != nil:
			b.Fatal(err)
		case rec.Count() == before:
			quiet++
		default:
			quiet = 0
		}
		time.Sleep(200 * time.Millisecond)
	}
	writes := rec.Count()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for b.Loop() {
		if _, err := r.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	if w := rec.Since(writes); len(w) > 0 {
		b.Errorf("no-op reconciles wrote %d times: %v", len(w), w)
	}
}

// processCPU is the CPU time this process has used: the reconciles, and
// the manager's goroutines, idle in steady state.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
