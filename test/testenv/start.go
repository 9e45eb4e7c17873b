package testenv

import (
	"context"
	"sync"
	"testing"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
)

// Start runs run in a goroutine until the test ends, for a controller, a
// server or a simulator. The returned stop cancels run's context, waits
// for it to return and fails the test with what and run's error; it runs
// when the test ends and may be called before, as often as wanted.
func Start(tb testing.TB, what string, run func(ctx context.Context) error) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(tb.Context()))
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("%s: %v", what, err)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}

// FreePort claims a TCP port for a server the test starts, until the
// test ends: hostlock.ClaimPort's, from a range the kernel never hands out
// (a port asked of the kernel and closed again could be handed to any
// process of the machine before the server binds it), that no other
// process of this machine claims meanwhile. The server may listen on any
// address.
func FreePort(tb testing.TB) int {
	tb.Helper()
	p, err := hostlock.ClaimPort()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := p.Release(); err != nil {
			tb.Error(err)
		}
	})
	return p.Number
}
