//go:build !linux

package endpointpicker

import (
	"net"
	"strconv"
	"syscall"
	"time"
)

// childAttr: only Linux can end a child with its parent; elsewhere Stop
// does it.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// listensOn: without /proc, only whether something accepts connections at
// the port on 127.0.0.1, whichever process it is.
func listensOn(_, port int) (bool, error) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false, nil //nolint:nilerr // not listening yet
	}
	_ = c.Close()
	return true, nil
}

// listeners: unknown without /proc.
func listeners(int) ([]int, error) { return nil, nil }
