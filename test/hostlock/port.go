package hostlock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// The ports ClaimPort hands out. They lie below the kernel's ephemeral
// range (net.ipv4.ip_local_port_range, 32768 to 60999 unless changed),
// from which Linux takes the port of every bind to port 0 and of every
// outgoing connection: a port asked of the kernel (net.Listen on ":0"),
// closed and bound again later by a child can be handed to any process on
// the machine in between, and the child then fails to bind while the
// caller talks to whatever took it. The kernel never hands out these.
const (
	FirstPort = 20000
	LastPort  = 20999
)

// localPortRange is where Linux keeps the ephemeral range.
const localPortRange = "/proc/sys/net/ipv4/ip_local_port_range"

// Port is a TCP port this process holds among the processes of this
// machine that claim theirs here, for a server that binds it later on
// every address (GIE's endpoint picker binds ":port").
type Port struct {
	// Number is the port.
	Number int
	lock   *Lock
}

// ClaimPort claims the first port from FirstPort to LastPort that no live
// process holds (a lock file per port in Dir()) and that nothing listens
// on now, on any address. Release gives it up; so does the end of this
// process.
func ClaimPort() (*Port, error) { return claimPort(Dir(), localPortRange) }

func claimPort(dir, rangeFile string) (*Port, error) {
	if err := outsideEphemeralRange(rangeFile); err != nil {
		return nil, err
	}
	for n := FirstPort; n <= LastPort; n++ {
		l, err := Try(dir, PortName(n))
		if errors.Is(err, ErrHeld) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("claim port %d: %w", n, err)
		}
		// A process that does not claim its ports here may listen on it.
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(n))
		if err != nil {
			_ = l.Release()
			continue
		}
		if err := ln.Close(); err != nil {
			_ = l.Release()
			return nil, fmt.Errorf("claim port %d: %w", n, err)
		}
		return &Port{Number: n, lock: l}, nil
	}
	return nil, fmt.Errorf("claim a port: every port from %d to %d is held or in use (lock files in %s)", FirstPort, LastPort, dir)
}

// outsideEphemeralRange fails when the kernel's ephemeral range, read from
// rangeFile, overlaps FirstPort to LastPort. Without the file (not Linux)
// there is nothing to check.
func outsideEphemeralRange(rangeFile string) error {
	data, err := os.ReadFile(rangeFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("claim a port: read the ephemeral port range: %w", err)
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return fmt.Errorf("claim a port: %s holds %q, want two ports", rangeFile, data)
	}
	low, errLow := strconv.Atoi(fields[0])
	high, errHigh := strconv.Atoi(fields[1])
	if err := errors.Join(errLow, errHigh); err != nil {
		return fmt.Errorf("claim a port: %s: %w", rangeFile, err)
	}
	if low <= LastPort && FirstPort <= high {
		return fmt.Errorf("claim a port: the kernel's ephemeral ports %d to %d (%s) overlap the ports claimed here, %d to %d: the kernel could hand one to any process", low, high, rangeFile, FirstPort, LastPort)
	}
	return nil
}

// PortName is the name ClaimPort claims port n by (Try it to see whether
// a process holds it).
func PortName(n int) string { return "port-" + strconv.Itoa(n) }

// File is the open lock file, for the child that binds the port to
// inherit (exec.Cmd.ExtraFiles), so that it holds the claim as long as it
// lives, after this process too (the demo's kept processes).
func (p *Port) File() *os.File { return p.lock.File() }

// Release gives the port up; a nil Port does nothing.
func (p *Port) Release() error {
	if p == nil {
		return nil
	}
	if err := p.lock.Release(); err != nil {
		return fmt.Errorf("port %d: %w", p.Number, err)
	}
	return nil
}
