package detach

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestProcStat(t *testing.T) {
	tests := map[string]struct {
		stat      string
		comm      string
		ppid      int
		state     byte
		wantParse bool
	}{
		"plain":                {"42 (etcd) S 7 42 42 0", "etcd", 7, 'S', true},
		"spaces and parens":    {"42 (a) b (c) Z 9 1", "a) b (c", 9, 'Z', true},
		"truncated":            {"42 (etcd", "", 0, 0, false},
		"no fields after comm": {"42 (etcd) ", "", 0, 0, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			comm, ppid, ok := procParent([]byte(tc.stat))
			if ok != tc.wantParse || comm != tc.comm || ppid != tc.ppid {
				t.Errorf("procParent = %q, %d, %v; want %q, %d, %v", comm, ppid, ok, tc.comm, tc.ppid, tc.wantParse)
			}
			if got := procState([]byte(tc.stat)); got != tc.state {
				t.Errorf("procState = %q, want %q", got, tc.state)
			}
		})
	}
}

// TestStartStop: a detached process outlives nothing here, but it runs in
// its own session, is recognised by its marker, and Stop ends it.
func TestStartStop(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	log := t.TempDir() + "/sleep.log"
	proc, exited, err := Start([]string{sleep, "300"}, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(proc.Pid, "300") {
		t.Fatal("the started process is not alive with its marker")
	}
	if _, err := os.Stat("/proc"); err == nil && Alive(proc.Pid, "not-in-its-command-line") {
		t.Error("Alive accepted a marker the command line lacks")
	}
	if kids := Children(os.Getpid()); kids != nil && kids["sleep"] != proc.Pid {
		t.Errorf("Children = %v, want sleep -> %d", kids, proc.Pid)
	}
	if err := Stop(proc.Pid, "300", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the process did not end after Stop")
	}
	if Alive(proc.Pid, "") {
		t.Error("alive after Stop")
	}
	if err := Stop(proc.Pid, "", time.Second); err != nil {
		t.Errorf("Stop of a gone process: %v", err)
	}
}

// TestStartReturnsRunningArgv: when Start returns, the process already runs
// its program, so its command line (which Alive and Stop match) is argv.
// The kernel finishes an exec after the parent may go on; before Start
// waited for it, about 1 start in 40 read an empty command line (24 of
// 1,000 at load 11), and TestStartStop failed with "the started process is
// not alive with its marker".
func TestStartReturnsRunningArgv(t *testing.T) {
	if _, err := os.Stat("/proc"); err != nil {
		t.Skip("no /proc")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	log := t.TempDir() + "/sleep.log"
	const starts = 300
	empty := 0
	for i := range starts {
		argv := []string{sleep, strconv.Itoa(1000 + i)}
		proc, exited, err := Start(argv, nil, log)
		if err != nil {
			t.Fatal(err)
		}
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(proc.Pid) + "/cmdline")
		_ = proc.Kill()
		<-exited
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00"); strings.Join(got, " ") != strings.Join(argv, " ") {
			empty++
			if empty == 1 {
				t.Errorf("start %d: command line %q right after Start, want %q", i, got, argv)
			}
		}
	}
	if empty > 0 {
		t.Errorf("%d of %d starts returned before the process ran its program", empty, starts)
	}
}
