package controllertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/presets"
	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// BenchmarkConverge creates prefill/decode services against the local API
// server with the controller running and reports the time until every
// child of every service exists (s-to-children; s-to-create is how long
// creating the services took), the writes the controller sent per service
// until then and until its statuses settled (writes/service), the writes
// while every service is reconciled once more afterwards (steady-writes,
// over steady-reconciles; 0 is the goal), and memory and CPU. The
// controller runs as its own odh-serving process (BENCH_CONTROLLER=inprocess
// runs it in the test process instead): controller-peak-rss-MiB and
// controller-cpu-s are that process's, test-peak-rss-MiB and
// test-process-cpu-s the test process's (its clients and the children
// cache; with inprocess also the controller), apiserver+etcd-cpu-s the
// control plane's. Run it with `make bench-controller`; one size with
// -bench 'BenchmarkConverge/services=1000$'.
//
// noisy/services=N runs the same in a cluster that also holds 10×N
// Deployments and 10×N Services that are not odh-serving's (unlabelled, no
// owner) in the watched namespace, made before the controller starts: what
// the controller's cache and CPU pay for objects it does not manage.
// noise-reconciles counts the reconciles between the controller's start
// and the first service, which only the noise can cause (0 is the goal).
func BenchmarkConverge(b *testing.B) {
	for _, n := range []int{100, 500, 1000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			for range b.N {
				converge(b, n, 0, nil)
			}
		})
	}
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("noisy/services=%d", n), func(b *testing.B) {
			for range b.N {
				converge(b, n, 10*n, nil)
			}
		})
	}
}

// BenchmarkConvergeOnCluster is BenchmarkConverge on the cluster
// (test/kwokcluster): the services' Deployments get ReplicaSets and Pods
// from kube-controller-manager, placed by kube-scheduler and run by kwok,
// and nothing writes their status by hand (the harness writes the
// gateway's). It also reports the time until every pod runs and every
// service is Ready (s-to-ready), and the CPU of kube-scheduler,
// kube-controller-manager and kwok (cluster-cpu-s) apart from the API
// server's and etcd's, both counted until then. One size:
// -bench 'BenchmarkConvergeOnCluster/services=100$'. Above 100 services
// the cluster gets more nodes for the run (benchNodes).
func BenchmarkConvergeOnCluster(b *testing.B) {
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			cluster := nodes.Need(b)
			addBenchNodes(b, benchNodes(n))
			for range b.N {
				converge(b, n, 0, cluster)
			}
		})
	}
}

func converge(b *testing.B, n, noise int, cluster *kwokcluster.Cluster) {
	b.Helper()
	var clusterPIDs []int
	if cluster != nil {
		clusterPIDs = cluster.PIDs()
	}
	clusterCPU := func() time.Duration {
		var sum time.Duration
		for _, pid := range clusterPIDs {
			d, err := procCPU(pid)
			if err != nil {
				b.Fatalf("cluster CPU: %v", err)
			}
			sum += d
		}
		return sum
	}
	resetPeakRSS()
	runtime.GC()
	e := &env{t: b, c: cp.Client, rec: &testenv.Recorder{}}
	e.ns = testenv.NewNamespace(b, cp.Client, "bench")
	if cluster != nil {
		noWorkloads(b)
		// Its pods would hold the nodes' pod slots for the next run.
		testenv.DeleteNamespaceAtEnd(b, cp.Client, e.ns, 20*time.Minute)
	} else {
		// Once the controller stopped (cleanups run after the defers).
		b.Cleanup(func() { removeWorkloads(b, e.ns) })
	}
	e.sys = testenv.NewNamespace(b, cp.Client, "benchsys")
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	e.opts = controller.Options{
		Options: engine.Options{SystemNamespace: e.sys}, WatchNamespaces: []string{e.ns}, DisableWebhooks: true,
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", MaxConcurrentReconciles: benchWorkers(),
	}
	perService, kinds := childrenOf(b, e.sys)
	createNoise(b, e.ns, noise)
	ctl := startBenchController(b, e)
	defer ctl.stop()
	// Whatever the controller reconciles before the first service exists,
	// the noise made it (the controller has synced by the time its
	// /metrics answers; the wait lets queued events through).
	time.Sleep(2 * time.Second)
	noiseReconciles := ctl.reconciles()
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()

	children := watchChildren(b, runCtx, kinds)
	b.ResetTimer()
	ctlCPU := func() time.Duration {
		if ctl.pid() == 0 {
			return 0
		}
		d, err := procCPU(ctl.pid())
		if err != nil {
			b.Fatalf("controller CPU: %v", err)
		}
		return d
	}
	skip := append([]int{ctl.pid()}, clusterPIDs...)
	cpuBefore, serversBefore, ctlBefore, clusterBefore := processCPU(), childrenCPU(b, skip...), ctlCPU(), clusterCPU()
	writesBefore := ctl.writes()
	began := time.Now()
	createServices(b, e.ns, n)
	created := time.Since(began)
	want := n * perService
	for {
		got := countChildren(b, children, e.ns, kinds)
		if got >= want {
			break
		}
		if time.Since(began) > 20*time.Minute {
			b.Fatalf("%d of %d children after 20 minutes", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(began)
	writesAtChildren := ctl.writes() - writesBefore
	var ready time.Duration
	if cluster != nil {
		// Every pod Running and Ready, every service Ready (the gateway's
		// statuses written as the harness does). Each round lists every
		// service, route and pool: the pause keeps what the polling costs
		// the API server a second the same at every size.
		pause := max(time.Second, time.Duration(n)*5*time.Millisecond)
		for {
			e.simulate()
			err := e.allReady()
			if err == nil {
				err = podsRunning(e.ns)
			}
			if err == nil {
				break
			}
			if time.Since(began) > 30*time.Minute {
				b.Fatalf("after 30 minutes: %v", err)
			}
			time.Sleep(pause)
		}
		ready = time.Since(began)
	}
	cpu, servers, ctlUsed, clusterUsed := processCPU()-cpuBefore, childrenCPU(b, skip...)-serversBefore, ctlCPU()-ctlBefore, clusterCPU()-clusterBefore
	b.StopTimer()

	// Settled: no write for 3 seconds (statuses follow the children).
	last, quiet := ctl.writes(), time.Now()
	for time.Since(quiet) < 3*time.Second {
		if time.Since(began) > 35*time.Minute {
			b.Fatalf("the controller still writes after 35 minutes")
		}
		time.Sleep(500 * time.Millisecond)
		if c := ctl.writes(); c != last {
			last, quiet = c, time.Now()
		}
	}
	settled := ctl.writes() - writesBefore
	settledAfter := time.Since(began)

	// A full resync: every service is touched (an annotation the engine
	// does not propagate) and so reconciled; none of it should write.
	reconciledBefore := ctl.reconciles()
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("pd-%04d", i)
	}
	touch(b, e.c, e.ns, names)
	deadline := time.Now().Add(5 * time.Minute)
	for ctl.reconciles()-reconciledBefore < float64(n) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	steady := ctl.writes() - writesBefore - settled
	steadyReconciles := ctl.reconciles() - reconciledBefore

	if path := os.Getenv("BENCH_HEAPPROFILE"); path != "" {
		if p, ok := ctl.(*process); ok {
			p.heapProfile(path) // the controller process's live heap
		} else {
			writeHeapProfile(b, path) // the in-process controller's, with the test's
		}
	}

	b.ReportMetric(took.Seconds(), "s-to-children")
	if cluster != nil {
		b.ReportMetric(ready.Seconds(), "s-to-ready")
		b.ReportMetric(clusterUsed.Seconds(), "cluster-cpu-s")
	}
	b.ReportMetric(created.Seconds(), "s-to-create")
	b.ReportMetric(settledAfter.Seconds(), "s-to-settled")
	b.ReportMetric(float64(writesAtChildren)/float64(n), "writes/service-to-children")
	b.ReportMetric(float64(settled)/float64(n), "writes/service")
	b.ReportMetric(float64(steady), "steady-writes")
	b.ReportMetric(steadyReconciles, "steady-reconciles")
	b.ReportMetric(peakRSSMiB(b, "self"), "test-peak-rss-MiB")
	if pid := ctl.pid(); pid != 0 {
		b.ReportMetric(peakRSSMiB(b, strconv.Itoa(pid)), "controller-peak-rss-MiB")
		b.ReportMetric(ctlUsed.Seconds(), "controller-cpu-s")
		if heap, err := ctl.(*process).gauge("go_memstats_heap_inuse_bytes"); err == nil {
			b.ReportMetric(heap/(1<<20), "controller-heap-inuse-MiB") // at the end, after the resync
		}
	}
	b.ReportMetric(cpu.Seconds(), "test-process-cpu-s")
	b.ReportMetric(servers.Seconds(), "apiserver+etcd-cpu-s")
	b.ReportMetric(servers.Seconds()*1000/float64(n), "apiserver+etcd-cpu-ms/service")
	if noise > 0 {
		b.ReportMetric(noiseReconciles, "noise-reconciles")
	}
}

// benchNodes are the nodes a run of n services adds to the cluster's six:
// one CPU-only node (64 cores, 256 GiB, 1,000 pods, as kwok-cpu-0) for
// every 100 services above 100. A prefill/decode service's four pods ask
// for 556m CPU and 884 MiB together; the GPU nodes take 110 pods each, and
// the two CPU nodes' 128 cores about 920 more of these pods: from about
// 340 services on, some would stay Pending.
func benchNodes(n int) []kwokcluster.Node {
	var extra []kwokcluster.Node
	for i := range max(0, (n-1)/100) {
		extra = append(extra, kwokcluster.Node{Name: fmt.Sprintf("kwok-bench-cpu-%d", i), CPU: "64", Memory: "256Gi", Pods: 1000})
	}
	return extra
}

// addBenchNodes adds the nodes to the running cluster and removes them
// when the benchmark ends, after its namespace and pods are gone (the
// tests count six nodes).
func addBenchNodes(b *testing.B, extra []kwokcluster.Node) {
	b.Helper()
	if len(extra) == 0 {
		return
	}
	b.Cleanup(func() {
		if err := kwokcluster.RemoveNodes(context.Background(), cp.Client, extra); err != nil {
			b.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kwokcluster.AddNodes(ctx, cp.Client, extra); err != nil {
		b.Fatal(err)
	}
}

// noWorkloads fails unless the cluster holds no Deployment: one left by
// an earlier run would get its ReplicaSet and pods beside this run's, on
// this run's CPU and nodes.
func noWorkloads(b *testing.B) {
	b.Helper()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DeploymentList"))
	if err := cp.Client.List(context.Background(), list); err != nil {
		b.Fatal(err)
	}
	if len(list.Items) > 0 {
		d := list.Items[0]
		b.Fatalf("the cluster holds %d Deployments before the run (%s/%s first), which kube-controller-manager would give pods during it", len(list.Items), d.Namespace, d.Name)
	}
}

// removeWorkloads deletes the Deployments and Services in ns that a
// simulated run leaves (no garbage collector runs there): a cluster
// started later in the process would make their pods and EndpointSlices
// during its own run.
func removeWorkloads(b *testing.B, ns string) {
	b.Helper()
	ctx := context.Background()
	if err := cp.Client.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(ns)); err != nil {
		b.Errorf("delete the Deployments in %s: %v", ns, err)
	}
	services := &metav1.PartialObjectMetadataList{}
	services.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceList"))
	if err := cp.Client.List(ctx, services, client.InNamespace(ns)); err != nil {
		b.Errorf("list the Services in %s: %v", ns, err)
		return
	}
	// Services have no delete-collection.
	forEach(b, len(services.Items), func(i int) error {
		m := services.Items[i]
		err := cp.Client.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// noisePrefix starts the names of the objects createNoise makes, which
// countChildren leaves out.
const noisePrefix = "unrelated-"

// createNoise creates n Deployments and n Services in ns that are not
// odh-serving's: no labels of ours, no owner.
func createNoise(b *testing.B, ns string, n int) {
	b.Helper()
	if n == 0 {
		return
	}
	labels := map[string]string{"app": "unrelated"}
	forEach(b, n, func(i int) error {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s%05d", noisePrefix, i)},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}}},
				},
			},
		}
		if err := cp.Client.Create(context.Background(), d); err != nil {
			return err
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s%05d", noisePrefix, i)},
			Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}},
		}
		return cp.Client.Create(context.Background(), svc)
	})
}

// childrenOf renders the benchmark's service once: how many children a
// service has (with its serving certificate secret) and of which kinds.
func childrenOf(b *testing.B, sys string) (int, []schema.GroupVersionKind) {
	b.Helper()
	svc := &v1alpha2.LLMInferenceService{}
	if err := yaml.UnmarshalStrict([]byte(prefillDecode), svc); err != nil {
		b.Fatal(err)
	}
	svc.Namespace = "x"
	catalog, err := presets.Catalog(sys, "kserve-", nil)
	if err != nil {
		b.Fatal(err)
	}
	images, err := presets.Images()
	if err != nil {
		b.Fatal(err)
	}
	res, err := engine.Render(context.Background(), svc, catalog, engine.Options{SystemNamespace: sys, Images: images, Phase: "dual"})
	if err != nil {
		b.Fatal(err)
	}
	kinds := []schema.GroupVersionKind{{Version: "v1", Kind: "Secret"}}
	for _, o := range res.Objects {
		gvk := o.GetObjectKind().GroupVersionKind()
		if !contains(kinds, gvk) {
			kinds = append(kinds, gvk)
		}
	}
	return len(res.Objects) + 1, kinds
}

func contains(kinds []schema.GroupVersionKind, k schema.GroupVersionKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// createServices creates n prefill/decode services.
func createServices(b *testing.B, ns string, n int) {
	b.Helper()
	forEach(b, n, func(i int) error {
		svc := &v1alpha2.LLMInferenceService{}
		if err := yaml.UnmarshalStrict([]byte(prefillDecode), svc); err != nil {
			return err
		}
		svc.Name, svc.Namespace = fmt.Sprintf("pd-%04d", i), ns
		return cp.Client.Create(context.Background(), svc)
	})
}

// forEach runs do for 0..n-1, eight at a time, and fails on the first error.
func forEach(tb testing.TB, n int, do func(i int) error) {
	tb.Helper()
	next := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}

// watchChildren starts a metadata-only cache of the child kinds, so
// counting them costs the API server one watch event per object rather than
// a list every poll.
func watchChildren(b *testing.B, ctx context.Context, kinds []schema.GroupVersionKind) cache.Cache {
	b.Helper()
	c, err := cache.New(cp.Config, cache.Options{Scheme: cp.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	for _, gvk := range kinds {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		if _, err := c.GetInformer(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			b.Error(err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("the children cache did not sync")
	}
	return c
}

// countChildren counts the children in ns: namespaced kinds there (but
// the noise), and the cluster-scoped bindings whose names start with it.
func countChildren(b *testing.B, c cache.Cache, ns string, kinds []schema.GroupVersionKind) int {
	b.Helper()
	total := 0
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{client.UnsafeDisableDeepCopy} // only counted
		if gvk.Kind != "ClusterRoleBinding" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := c.List(context.Background(), list, opts...); err != nil {
			b.Fatal(err)
		}
		for _, item := range list.Items {
			if (gvk.Kind == "ClusterRoleBinding" && !strings.HasPrefix(item.Name, ns+"-")) || strings.HasPrefix(item.Name, noisePrefix) {
				continue
			}
			if gvk.Kind == "Secret" && !strings.HasSuffix(item.Name, "-kserve-self-signed-certs") {
				continue
			}
			total++
		}
	}
	return total
}

// processCPU is the CPU time this process (controller, webhooks, test
// clients) has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childrenCPU is the CPU time the child processes (kube-apiserver and
// etcd, which envtest starts) have used, from /proc (Linux; 0 elsewhere);
// skip, when not 0, is a child left out (the controller's process).
func childrenCPU(b *testing.B, skip ...int) time.Duration {
	b.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	self := strconv.Itoa(os.Getpid())
	var ticks int64
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// The fields after the command, which is in parentheses.
		i := strings.LastIndexByte(string(data), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data)[i+1:])
		if len(f) < 13 || f[1] != self || slices.ContainsFunc(skip, func(pid int) bool { return path == fmt.Sprintf("/proc/%d/stat", pid) }) {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += utime + stime
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// resetPeakRSS restarts the kernel's peak RSS count of this process, so
// each run reports its own (Linux; ignored elsewhere).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0o600) }

// peakRSSMiB reads VmHWM from /proc/<pid>/status ("self" for this
// process); 0 where there is none.
func peakRSSMiB(b *testing.B, pid string) float64 {
	b.Helper()
	mib, err := procPeakRSSMiB(pid)
	if err != nil {
		b.Logf("no peak RSS of %s: %v", pid, err)
	}
	return mib
}

// benchWorkers is BENCH_WORKERS, or the controller's default.
func benchWorkers() int {
	n, _ := strconv.Atoi(os.Getenv("BENCH_WORKERS"))
	return n
}

// writeHeapProfile writes this process's heap profile after a collection
// (BENCH_HEAPPROFILE with BENCH_CONTROLLER=inprocess: the controller's heap
// and the test's together).
func writeHeapProfile(b *testing.B, path string) {
	b.Helper()
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// podsRunning returns nil once the namespace has pods and every one of
// them is Running and Ready.
func podsRunning(ns string) error {
	pods := &corev1.PodList{}
	if err := cp.Client.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("no pod in %s yet", ns)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if c := podCondition(p, corev1.PodReady); p.Status.Phase != corev1.PodRunning || c == nil || c.Status != corev1.ConditionTrue {
			return fmt.Errorf("pod %s: %s, Ready %v", p.Name, p.Status.Phase, c)
		}
	}
	return nil
}
