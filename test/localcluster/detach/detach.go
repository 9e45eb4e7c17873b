package detach

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Start runs argv in a session of its own, so a Ctrl-C in the terminal and
// the exit of the caller leave it running. Stdin is /dev/null; stdout and
// stderr go to logPath, which is truncated. env is added to the caller's
// environment. The process is reaped in the background while the caller
// lives; the returned channel receives its exit error if it ends before the
// caller does. files are the child's descriptors from 3 on: a lock file
// (test/hostlock) it inherits holds the lock as long as it runs.
//
// Start returns once the process runs argv, so that Alive and Stop, which
// recognise it by its command line, find it at once. The kernel lets the
// parent go on (os/exec's Start returns) before it has laid out the new
// program's arguments: until then /proc/<pid>/cmdline is empty.
func Start(argv, env []string, logPath string, files ...*os.File) (*os.Process, <-chan error, error) {
	if len(argv) == 0 {
		return nil, nil, errors.New("start detached process: empty command")
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o750); err != nil {
		return nil, nil, fmt.Errorf("start %s: create log folder: %w", argv[0], err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, nil, fmt.Errorf("start %s: create log: %w", argv[0], err)
	}
	// The child gets its own copy of the descriptor.
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := waitExec(cmd.Process.Pid, execTimeout); err != nil {
		_ = cmd.Process.Kill()
		return nil, nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	return cmd.Process, exited, nil
}

// execTimeout bounds how long Start waits for the kernel to finish
// starting the program: microseconds on an idle machine.
const execTimeout = 10 * time.Second

// waitExec waits until pid's command line is readable, that is until the
// kernel has finished the exec, or the process has ended, or there is no
// /proc to ask.
func waitExec(pid int, timeout time.Duration) error {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	deadline := time.Now().Add(timeout)
	for {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || len(cmdline) > 0 {
			return nil // no /proc, gone, or running its program
		}
		if stat, err := os.ReadFile(filepath.Join(dir, "stat")); err != nil {
			return nil
		} else if state := procState(stat); state == 'Z' || state == 'X' {
			return nil // ended: the exit goes to the channel
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d has not finished starting after %s", pid, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// Alive reports whether pid is a running process (not a zombie) whose
// command line contains marker. An empty marker checks liveness only.
func Alive(pid int, marker string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true // no /proc (not Linux): liveness is all we can check
	}
	if state := procState(stat); state == 'Z' || state == 'X' {
		return false
	}
	if marker == "" {
		return true
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte(marker))
}

// Stop sends SIGTERM to pid if Alive(pid, marker), waits up to grace for it
// to end, then sends SIGKILL. A process that is already gone is no error.
func Stop(pid int, marker string, grace time.Duration) error {
	if !Alive(pid, marker) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("stop process %d: %w", pid, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !Alive(pid, "") {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process %d after %s: %w", pid, grace, err)
	}
	for range 100 {
		if !Alive(pid, "") {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("process %d survived SIGKILL", pid)
}

// Children returns the pids of the children of ppid by command name (the
// comm field of /proc/<pid>/stat, such as "etcd" or "kube-apiserver"). It
// returns nil where there is no /proc.
func Children(ppid int) map[string]int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		name, parent, ok := procParent(stat)
		if ok && parent == ppid {
			out[name] = pid
		}
	}
	return out
}

// procState returns the state letter of a /proc/<pid>/stat line:
// "pid (comm) S ppid ...". comm may hold spaces and parentheses, so the
// fields after it are found from the last ')'.
func procState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

func procParent(stat []byte) (comm string, ppid int, ok bool) {
	open, closing := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || closing < open {
		return "", 0, false
	}
	fields := strings.Fields(string(stat[closing+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return "", 0, false
	}
	return string(stat[open+1 : closing]), ppid, true
}
