package testenv

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Timeout is how long Eventually waits.
const Timeout = 30 * time.Second

// interval is how often Within checks.
const interval = 100 * time.Millisecond

// Eventually is Within Timeout.
func Eventually(tb testing.TB, what string, check func() error) {
	tb.Helper()
	Within(tb, Timeout, what, check)
}

// Within calls check every 100ms until it returns nil, and fails the test
// with what and check's last error when timeout has passed or the test's
// context is done (the test failed or was interrupted). In a Cleanup
// function, where the test's context is already done, it polls for the
// whole timeout.
func Within(tb testing.TB, timeout time.Duration, what string, check func() error) {
	tb.Helper()
	ctx := tb.Context()
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	last := errors.New("not checked")
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		tb.Fatalf("%s: %v (after %s: %v)", what, last, timeout, err)
	}
}
