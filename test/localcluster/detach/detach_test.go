package detach

import (
	"os"
	"os/exec"
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
