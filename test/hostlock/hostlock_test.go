package hostlock_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
	"github.com/opendatahub-io/odh-serving/test/hostlock"
)

// A claim is refused to a second claimant, in this process or another,
// until the holder releases it or ends.
func TestTry(t *testing.T) {
	dir := t.TempDir()
	a, err := hostlock.Try(dir, "range-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hostlock.Try(dir, "range-1"); !errors.Is(err, hostlock.ErrHeld) {
		t.Fatalf("second claim of a held name: %v, want ErrHeld", err)
	}
	b, err := hostlock.Try(dir, "range-2")
	if err != nil {
		t.Fatalf("another name: %v", err)
	}
	if err := errors.Join(a.Release(), a.Release(), b.Release()); err != nil {
		t.Fatal(err)
	}
	again, err := hostlock.Try(dir, "range-1")
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	if err := again.Release(); err != nil {
		t.Fatal(err)
	}
}

// The claim of a process that is killed ends with it.
func TestTryOtherProcess(t *testing.T) {
	if dir := os.Getenv("HOSTLOCK_HOLD"); dir != "" {
		hold(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTryOtherProcess$")
	cmd.Env = append(os.Environ(), "HOSTLOCK_HOLD="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stderr = nil, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("the holder said %q: %v", line, err)
	}
	heldUntilKilled(t, cmd, dir)
}

// heldUntilKilled: pods in dir is refused while cmd runs, and free once
// it is killed.
func heldUntilKilled(t *testing.T, cmd *exec.Cmd, dir string) {
	t.Helper()
	if _, err := hostlock.Try(dir, "pods"); !errors.Is(err, hostlock.ErrHeld) {
		t.Fatalf("claim of a name another process holds: %v, want ErrHeld", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	l, err := hostlock.Try(dir, "pods")
	if err != nil {
		t.Fatalf("claim after the holder was killed: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// hold claims pods in dir, says so, and waits to be killed (a minute at
// most).
func hold(dir string) {
	l, err := hostlock.Try(dir, "pods")
	if err != nil {
		fmt.Println("error: " + err.Error())
		os.Exit(1)
	}
	fmt.Println("held")
	time.Sleep(time.Minute)
	_ = l.Release()
	os.Exit(1)
}

// A child that inherits the lock file holds the claim after its parent
// gives it up, until it ends: the demo's kept kwok holds its pod range so.
func TestInheritedClaim(t *testing.T) {
	if os.Getenv("HOSTLOCK_SLEEP") != "" {
		time.Sleep(time.Minute)
		os.Exit(1)
	}
	dir := t.TempDir()
	l, err := hostlock.Try(dir, "pods")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInheritedClaim$")
	cmd.Env = append(os.Environ(), "HOSTLOCK_SLEEP=1")
	cmd.ExtraFiles = []*os.File{l.File()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	heldUntilKilled(t, cmd, dir)
}
