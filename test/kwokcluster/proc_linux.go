package kwokcluster

import "syscall"

// childAttr ends a child with this process, even when this one is killed
// (a test binary at its timeout): no scheduler or kwok outlives its test.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
