package controller

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// refused is the error a client gets from an API server that is not
// listening.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}

func TestRetryRefusedRetriesUntilTheServerListens(t *testing.T) {
	calls := 0
	got, err := retryRefused(context.Background(), func() (int, error) {
		if calls++; calls < 4 {
			return 0, refused
		}
		return 42, nil
	})
	if err != nil || got != 42 || calls != 4 {
		t.Fatalf("got %d, %v after %d calls; want 42, nil after 4", got, err, calls)
	}
}

func TestRetryRefusedPassesOtherErrors(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old resource version")
	busy := apierrors.NewTooManyRequests("storage is (re)initializing", 1)
	for _, want := range []error{gone, busy, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, "x")} {
		calls := 0
		_, err := retryRefused(context.Background(), func() (int, error) { calls++; return 0, want })
		if !errors.Is(err, want) || calls != 1 {
			t.Errorf("%v: got %v after %d calls; want it back after 1", want, err, calls)
		}
	}
}

func TestRetryRefusedStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := retryRefused(ctx, func() (int, error) { return 0, refused })
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want the refused connection", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("returned %v after the context ended", d)
	}
}
