package hostlock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrHeld says another holder has the name.
var ErrHeld = errors.New("held by another process")

// Dir is the folder of the lock files every process on the machine shares.
func Dir() string { return os.TempDir() }

// Lock is a name this process holds until Release, or until it ends. Keep
// it reachable: its file closes, and the claim ends, when it is collected.
type Lock struct {
	// Name is what was claimed.
	Name string
	f    *os.File
}

// Try claims name in dir (the lock file odh-serving-<name>.lock), without
// waiting: an error wrapping ErrHeld when another holder has it, also when
// another user's lock file cannot be opened.
func Try(dir, name string) (*Lock, error) {
	path := filepath.Join(dir, "odh-serving-"+name+".lock")
	// Read-only and readable by all: flock needs no write access, so
	// another user's file can be locked too where the folder allows.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
	if errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("claim %s: %w (%w)", name, ErrHeld, err)
	}
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("claim %s (%s): %w", name, path, ErrHeld)
		}
		return nil, fmt.Errorf("claim %s: lock %s: %w", name, path, err)
	}
	return &Lock{Name: name, f: f}, nil
}

// File is the open lock file, for a child to inherit (exec.Cmd.ExtraFiles)
// so that it holds the claim as long as it lives.
func (l *Lock) File() *os.File { return l.f }

// Release gives the name up (children that inherited the file still hold
// it). Releasing twice, or a nil Lock, does nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	if err := f.Close(); err != nil {
		return fmt.Errorf("release %s: %w", l.Name, err)
	}
	return nil
}
