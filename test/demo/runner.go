package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/opendatahub-io/odh-serving/test/localcluster/detach"
)

// config says where the demo runs and how.
type config struct {
	// Root is the repository.
	Root string
	// Dir holds the kubeconfig, logs and state (bin/demo).
	Dir string
	// Out receives the progress lines.
	Out io.Writer
	// Keep leaves the environment running at the end (DEMO_KEEP=1).
	Keep bool
	// Detached runs the cluster (and, with Keep, the simulated data plane)
	// as processes that outlive the demo; otherwise they run inside it (the
	// integration test).
	Detached bool
	// Timeout bounds each wait; zero means two minutes.
	Timeout time.Duration
	// Binary is where odh-serving is built; empty means bin/odh-serving.
	Binary string
	// Built says Binary is built already (the integration test copies
	// `make build`'s, as the other test packages do): step 1 runs it and
	// does not build it again.
	Built bool
	// LoopbackOnly runs the demo as on a machine whose only address is
	// loopback (localcluster.HostIP fails there): without the webhooks and
	// without Models-as-a-Service. The integration test sets it to show
	// what such a machine leaves out.
	LoopbackOnly bool
}

// runner carries one demo run: progress output and what to tear down.
type runner struct {
	cfg   config
	start time.Time
	step  int
	// teardown runs in reverse order at the end, unless the run keeps its
	// environment.
	teardown []func() error
}

const steps = 17

// header prints a step's title with the time since the start.
func (r *runner) header(title string) {
	r.step++
	fmt.Fprintf(r.cfg.Out, "[%6.1fs] %d/%d %s\n", r.elapsed().Seconds(), r.step, steps, title)
}

// say prints a detail line under the current step.
func (r *runner) say(format string, args ...any) {
	fmt.Fprintf(r.cfg.Out, "           "+format+"\n", args...)
}

// block prints text indented under the current step.
func (r *runner) block(text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(r.cfg.Out, "             %s\n", line)
	}
}

func (r *runner) elapsed() time.Duration { return time.Since(r.start) }

func (r *runner) timeout() time.Duration {
	if r.cfg.Timeout > 0 {
		return r.cfg.Timeout
	}
	return 2 * time.Minute
}

// rel shortens a path under the repository for printing.
func (r *runner) rel(path string) string {
	if p, err := filepath.Rel(r.cfg.Root, path); err == nil && !strings.HasPrefix(p, "..") {
		return p
	}
	return path
}

// command runs a program, prints it (paths shortened), and returns its
// stdout; a failure carries its output.
func (r *runner) command(ctx context.Context, env []string, name string, args ...string) (string, error) {
	r.say("$ %s", r.commandLine(name, args))
	return r.run(ctx, env, name, args...)
}

// quiet runs a program without printing it.
func (r *runner) quiet(ctx context.Context, name string, args ...string) (string, error) {
	return r.run(ctx, nil, name, args...)
}

func (r *runner) commandLine(name string, args []string) string {
	shown := make([]string, 0, len(args)+1)
	for _, a := range append([]string{name}, args...) {
		shown = append(shown, r.rel(a))
	}
	return strings.Join(shown, " ")
}

func (r *runner) run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = r.cfg.Root
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s%s", r.commandLine(name, args), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// onTeardown registers a cleanup.
func (r *runner) onTeardown(f func() error) { r.teardown = append(r.teardown, f) }

// tearDown runs the cleanups, newest first.
func (r *runner) tearDown() error {
	var errs []error
	for i := len(r.teardown) - 1; i >= 0; i-- {
		errs = append(errs, r.teardown[i]())
	}
	r.teardown = nil
	return errors.Join(errs...)
}

// poll calls check every interval until it reports done, fails, or the
// timeout passes; what names the wait in the error.
func (r *runner) poll(ctx context.Context, what string, interval time.Duration, check func() (bool, error)) error {
	deadline := time.Now().Add(r.timeout())
	for {
		done, err := check()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not done after %s", what, r.timeout())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(interval):
		}
	}
}

// stopProcess is a teardown for a process the demo started.
func stopProcess(p *os.Process, marker string) func() error {
	return func() error { return detach.Stop(p.Pid, marker, 15*time.Second) }
}

// tailFile returns the last 20 lines of a log for an error message.
func tailFile(path string) string {
	const lines = 20
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
