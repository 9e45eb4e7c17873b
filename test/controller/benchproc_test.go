package controllertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// benchController is the controller a converge run measures: in the test
// process (BENCH_CONTROLLER=inprocess) or, by default, as its own
// odh-serving process, whose memory and CPU are then its own.
type benchController interface {
	// writes is how many writes the controller has sent.
	writes() int
	// reconciles is how many reconciles of services it has done.
	reconciles() float64
	// pid is the controller process's, or 0 in the test process.
	pid() int
	stop()
}

// inProcess runs controller.Run in the test process, its writes counted
// by a Recorder.
type inProcess struct {
	b      *testing.B
	rec    *testenv.Recorder
	cancel func()
	done   chan error
}

func startInProcess(b *testing.B, e *env) *inProcess {
	b.Helper()
	cfg := e.rec.Config(cp.Config)
	ctx, cancel := context.WithCancel(context.Background())
	c := &inProcess{b: b, rec: e.rec, cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- controller.Run(ctx, cfg, e.opts) }()
	return c
}

func (c *inProcess) writes() int         { return c.rec.Count() }
func (c *inProcess) reconciles() float64 { return reconciles(c.b) }
func (c *inProcess) pid() int            { return 0 }

func (c *inProcess) stop() {
	c.cancel()
	if err := <-c.done; err != nil {
		c.b.Errorf("controller: %v", err)
	}
}

// process runs `odh-serving controller` against the control plane; its
// writes and reconciles are read from its /metrics (client-go's
// rest_client_requests_total by method, controller-runtime's
// controller_runtime_reconcile_total).
type process struct {
	b       *testing.B
	cmd     *exec.Cmd
	metrics string
	pprof   string
	done    chan error
}

func startProcess(b *testing.B, e *env) *process {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "odh-serving")
	if err := testenv.BuildCommand(context.Background(), "odh-serving", bin); err != nil {
		b.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(b))
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(b))
	args := []string{
		"controller", "--kubeconfig", testenv.Kubeconfig(b, cp.Config, ""), "--disable-webhooks", "--manage-crds=false",
		"--system-namespace", e.sys, "--watch-namespaces", e.ns,
		"--metrics-bind-address", addr, "--health-probe-bind-address", "0", "--pprof-bind-address", pprofAddr,
		// Plain HTTP on loopback, so the TokenReviews of authenticated
		// scrapes do not count among the controller's requests.
		"--metrics-insecure",
	}
	if n := benchWorkers(); n > 0 {
		args = append(args, "--max-concurrent-reconciles", strconv.Itoa(n))
	}
	logs, err := os.Create(filepath.Join(dir, "controller.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if gogc := os.Getenv("BENCH_CONTROLLER_GOGC"); gogc != "" {
		cmd.Env = append(os.Environ(), "GOGC="+gogc) // the controller's alone
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &process{b: b, cmd: cmd, metrics: "http://" + addr + "/metrics", pprof: "http://" + pprofAddr + "/debug/pprof/", done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); logs.Close() }()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := p.scrape(); err == nil {
			break
		}
		select {
		case err := <-p.done:
			out, _ := os.ReadFile(logs.Name())
			b.Fatalf("controller exited: %v\n%s", err, out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			b.Fatal("the controller's /metrics did not answer within a minute")
		}
	}
	return p
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// heapProfile writes the controller's heap profile, taken after a
// collection, to path (BENCH_HEAPPROFILE).
func (p *process) heapProfile(path string) {
	resp, err := http.Get(p.pprof + "heap?gc=1")
	if err != nil {
		p.b.Fatalf("controller heap profile: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		p.b.Fatalf("controller heap profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		p.b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		p.b.Fatalf("controller heap profile: %v", err)
	}
}

func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// scrape reads the controller's metrics: writes by client-go and service
// reconciles.
func (p *process) scrape() (struct {
	writes     int
	reconciles float64
}, error) {
	var out struct {
		writes     int
		reconciles float64
	}
	resp, err := http.Get(p.metrics)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return out, fmt.Errorf("GET %s: %s", p.metrics, resp.Status)
	}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		line := s.Text()
		labels, value, ok := metricLine(line)
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(line, "rest_client_requests_total{"):
			for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
				if strings.Contains(labels, `method="`+m+`"`) {
					out.writes += int(value)
				}
			}
		case strings.HasPrefix(line, "controller_runtime_reconcile_total{"):
			if strings.Contains(labels, `controller="`+controller.ControllerName+`"`) {
				out.reconciles += value
			}
		}
	}
	return out, s.Err()
}

// metricLine splits a sample line of the text format into its labels and
// value.
func metricLine(line string) (labels string, value float64, ok bool) {
	open, closing := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	if open < 0 || closing < open {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(line[closing+1:]), 64)
	if err != nil {
		return "", 0, false
	}
	return line[open+1 : closing], v, true
}

// gauge reads one unlabelled sample of the controller's metrics, e.g.
// go_memstats_heap_inuse_bytes.
func (p *process) gauge(name string) (float64, error) {
	resp, err := http.Get(p.metrics)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s", name)
}

func (p *process) writes() int {
	m, err := p.scrape()
	if err != nil {
		p.b.Fatalf("controller metrics: %v", err)
	}
	return m.writes
}

func (p *process) reconciles() float64 {
	m, err := p.scrape()
	if err != nil {
		p.b.Fatalf("controller metrics: %v", err)
	}
	return m.reconciles
}

// startBenchController starts the controller BENCH_CONTROLLER names.
func startBenchController(b *testing.B, e *env) benchController {
	b.Helper()
	switch mode := os.Getenv("BENCH_CONTROLLER"); mode {
	case "", "process":
		return startProcess(b, e)
	case "inprocess":
		return startInProcess(b, e)
	default:
		b.Fatalf("BENCH_CONTROLLER=%s: want process or inprocess", mode)
		return nil
	}
}

// procCPU is the CPU time process pid has used, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command, which is in parentheses.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, errors.New("no command in stat")
	}
	f := strings.Fields(string(data)[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100, nil // USER_HZ
}

// procPeakRSSMiB is VmHWM from /proc/<pid>/status ("self" for this
// process).
func procPeakRSSMiB(pid string) (float64, error) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, errors.New("no VmHWM")
}
