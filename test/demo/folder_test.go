package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
)

// TestRunRefusesAFolderInUse: a run whose folder another live run uses
// stops at once, naming the folder, instead of stopping that run's
// processes as leftovers (two `make demo` on one machine share bin/demo).
func TestRunRefusesAFolderInUse(t *testing.T) {
	dir := t.TempDir()
	other, err := claimFolder(dir) // as the other run holds it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Release() })
	var out bytes.Buffer
	// Root has no charts: a run that went on would fail at step 1.
	_, err = runDemo(t.Context(), config{Root: t.TempDir(), Dir: dir, Out: &out, Detached: true})
	if err == nil || !errors.Is(err, hostlock.ErrHeld) || !strings.Contains(err.Error(), "another demo runs in "+dir) {
		t.Fatalf("a run in a folder in use: %v, want it refused naming %s", err, dir)
	}
	if out.Len() > 0 {
		t.Errorf("the refused run printed:\n%s", out.String())
	}
}
