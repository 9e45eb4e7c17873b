package endpointpicker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
)

// PortFlags are the endpoint picker's listen ports. It binds each on every
// address (":port"), so two on one machine need ports of their own.
var PortFlags = []string{"--grpc-port", "--grpc-health-port", "--metrics-port"}

// Process is GIE's endpoint picker running as a child of this process, at
// ports claimed for it (hostlock.ClaimPort).
//
// Ports asked of the kernel (":0") and closed again, as these were before,
// could be handed to any other process of the machine before the endpoint
// picker bound them: the endpoint picker then exited ("gRPC server failed
// to listen ... address already in use") and nothing noticed, while the
// gateway went on asking whatever listened there, such as another test
// package's or the demo's endpoint picker, which picked its own pods.
// Claimed ports are never handed out by the kernel, and Serving makes sure
// that it is this process that listens.
type Process struct {
	// Addr is where it serves ext_proc (gRPC): 127.0.0.1 and its
	// --grpc-port.
	Addr string
	// Args are its arguments, as run.
	Args []string

	cmd      *exec.Cmd
	grpcPort int
	ports    []*hostlock.Port
	done     chan struct{}
	waitErr  error
}

// Start runs the endpoint picker binary with args, each of PortFlags set
// (or added) to a port claimed for it and QuietPoolMetrics added, as the
// user of the kubeconfig file (the endpoint picker reads KUBECONFIG; it
// has no flag for it), its output to out. On Linux it ends with this
// process. Serving says when it listens; Stop ends it.
func Start(binary string, args []string, kubeconfig string, out io.Writer) (*Process, error) {
	p := &Process{Args: slices.Clone(args), done: make(chan struct{})}
	for _, flag := range PortFlags {
		port, err := hostlock.ClaimPort()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("endpoint picker: %s: %w", flag, err), p.release())
		}
		p.ports = append(p.ports, port)
		if i := slices.Index(p.Args, flag); i >= 0 && i+1 < len(p.Args) {
			p.Args[i+1] = strconv.Itoa(port.Number)
		} else {
			p.Args = append(p.Args, flag, strconv.Itoa(port.Number))
		}
		if flag == "--grpc-port" {
			p.grpcPort = port.Number
		}
	}
	p.Args = append(p.Args, QuietPoolMetrics...)
	p.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p.grpcPort))
	p.cmd = exec.Command(binary, p.Args...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = childAttr()
	if err := p.cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("endpoint picker: %w", err), p.release())
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited; Err then says how.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process exited, once Done is closed.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.waitErr
	default:
		return nil
	}
}

// Serving waits until the process itself listens at its gRPC port, and
// fails when it exits first, or ctx ends, saying which processes listen
// there instead.
func (p *Process) Serving(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := listensOn(p.Pid(), p.grpcPort)
		if err != nil {
			return fmt.Errorf("endpoint picker (pid %d): %w", p.Pid(), err)
		}
		if ok {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("endpoint picker (pid %d) exited before it listened at %s: %w%s", p.Pid(), p.Addr, p.waitErr, p.others())
		case <-ctx.Done():
			return fmt.Errorf("endpoint picker (pid %d) does not listen at %s: %w%s", p.Pid(), p.Addr, context.Cause(ctx), p.others())
		case <-tick.C:
		}
	}
}

// others says which processes listen at the gRPC port, if any do.
func (p *Process) others() string {
	pids, err := listeners(p.grpcPort)
	switch {
	case err != nil:
		return fmt.Sprintf(" (who listens at port %d: %v)", p.grpcPort, err)
	case len(pids) == 0:
		return ""
	}
	var who []string
	for _, pid := range pids {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		who = append(who, fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(comm))))
	}
	return fmt.Sprintf("; port %d is another process's: %s", p.grpcPort, strings.Join(who, ", "))
}

// Stop interrupts the process, kills it if it has not exited 10 s later,
// and gives up its ports.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = p.release()
}

func (p *Process) release() error {
	var errs []error
	for _, port := range p.ports {
		errs = append(errs, port.Release())
	}
	p.ports = nil
	return errors.Join(errs...)
}
