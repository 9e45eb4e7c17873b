//go:build !linux

package endpointpicker

import "syscall"

// childAttr: only Linux can end a child with its parent; elsewhere Stop
// does it.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
