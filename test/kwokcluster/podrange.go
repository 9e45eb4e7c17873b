package kwokcluster

import (
	"errors"
	"fmt"
	"os"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
)

// The pod ranges, 127.N.0.0/16: N from firstPodRange to lastPodRange.
// Left out: 127.0.0.0/16, where 127.0.0.1 serves everything and
// test/gateway takes its addresses from 127.0.100.1, and 127.100.0.0 to
// 127.199.255.255, where unit tests (test/modelserver, test/gateway,
// test/requests) pick random addresses.
const (
	firstPodRange = 1
	lastPodRange  = 99
)

// PodRange is the loopback /16 a cluster's pods take their IPs from, held
// so that no other cluster on this machine (another test package's, the
// demo's) hands out the same addresses while this one runs: test/modelserver
// listens at each pod's IP, and two clusters' model servers at one address
// answer each other's requests.
type PodRange struct {
	// CIDR is the range, as kwok's --cidr takes it.
	CIDR string
	lock *hostlock.Lock
}

// ClaimPodRange claims the first pod range no live process on this machine
// holds (test/hostlock: a lock file per range in hostlock.Dir()). Release
// gives it up; so does the end of this process, and of every child that
// inherited File.
func ClaimPodRange() (*PodRange, error) { return claimPodRange(hostlock.Dir()) }

func claimPodRange(dir string) (*PodRange, error) {
	for n := firstPodRange; n <= lastPodRange; n++ {
		cidr := fmt.Sprintf("127.%d.0.0/16", n)
		l, err := hostlock.Try(dir, fmt.Sprintf("kwok-pods-127.%d.0.0-16", n))
		if errors.Is(err, hostlock.ErrHeld) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("kwok cluster: pod range %s: %w", cidr, err)
		}
		return &PodRange{CIDR: cidr, lock: l}, nil
	}
	return nil, fmt.Errorf("kwok cluster: every pod range from 127.%d.0.0/16 to 127.%d.0.0/16 is held by another process (lock files in %s)", firstPodRange, lastPodRange, dir)
}

// File is the range's open lock file: a detached kwok that inherits it
// (exec.Cmd.ExtraFiles) holds the range as long as it runs.
func (r *PodRange) File() *os.File { return r.lock.File() }

// Release gives the range up; a nil PodRange does nothing.
func (r *PodRange) Release() error {
	if r == nil {
		return nil
	}
	if err := r.lock.Release(); err != nil {
		return fmt.Errorf("kwok cluster: pod range %s: %w", r.CIDR, err)
	}
	return nil
}
