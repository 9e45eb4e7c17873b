package endpointpicker

import "syscall"

// childAttr ends an endpoint picker with the process that runs it, even
// when that one is killed.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
