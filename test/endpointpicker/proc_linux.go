package endpointpicker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// childAttr ends an endpoint picker with the process that runs it, even
// when that one is killed.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// listensOn says whether the process pid has a socket open that listens on
// the TCP port (on any address).
func listensOn(pid, port int) (bool, error) {
	inodes, err := listenInodes(port)
	if err != nil || len(inodes) == 0 {
		return false, err
	}
	return holds(pid, inodes)
}

// listeners are the processes that have a socket open that listens on the
// TCP port.
func listeners(port int) ([]int, error) {
	inodes, err := listenInodes(port)
	if err != nil || len(inodes) == 0 {
		return nil, err
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ok, _ := holds(pid, inodes); ok {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// listenInodes are the inodes of the sockets that listen on the TCP port,
// from /proc/net/tcp and /proc/net/tcp6: each line after the header has the
// local address as hex address:port (field 2), the state (field 4, 0A is
// LISTEN) and the inode (field 10).
func listenInodes(port int) (map[string]bool, error) {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the sockets: %w", err)
		}
		lines := strings.Split(string(data), "\n")
		for _, line := range lines[min(1, len(lines)):] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" {
				continue
			}
			i := strings.LastIndexByte(f[1], ':')
			if n, err := strconv.ParseUint(f[1][i+1:], 16, 16); err == nil && int(n) == port {
				inodes[f[9]] = true
			}
		}
	}
	return inodes, nil
}

// holds says whether the process pid has one of the socket inodes open;
// false, without an error, when it has ended.
func holds(pid int, inodes map[string]bool) (bool, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the open files of pid %d: %w", pid, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(dir + "/" + fd.Name())
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true, nil
		}
	}
	return false, nil
}
