package testenv

import (
	"context"
	"net"
	"sync"
	"testing"
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

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a server the test starts.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
