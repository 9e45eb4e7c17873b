package controller

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// stalledAPIServer accepts every request and never answers it, as an API
// server that hangs does; each request's path is sent on the returned
// channel (when there is room).
func stalledAPIServer(t *testing.T) (*rest.Config, <-chan string) {
	t.Helper()
	seen := make(chan string, 64)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case seen <- r.URL.Path:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.CloseClientConnections()
		srv.Close()
	})
	return &rest.Config{Host: srv.URL}, seen
}

// TestStartEndsWithItsContext starts the controller against an API server
// that never answers, and cancels the start (a SIGTERM) once the
// controller waits on it: Run returns at once with an error that names
// the step it was waiting on. Without the cancel, StartTimeout ends it
// the same way.
func TestStartEndsWithItsContext(t *testing.T) {
	for name, tc := range map[string]struct {
		watch   []string
		timeout time.Duration
		cancel  bool
		want    []string
	}{
		"SIGTERM, all namespaces": {
			cancel: true, timeout: time.Hour,
			want: []string{"create the manager", "gave up waiting on the API server", context.Canceled.Error()},
		},
		"SIGTERM, watched namespaces": {
			watch: []string{"team"}, cancel: true, timeout: time.Hour,
			want: []string{"get CustomResourceDefinition " + crdGateway, "gave up waiting on the API server", context.Canceled.Error()},
		},
		"start timeout": {
			timeout: 2 * time.Second,
			want:    []string{"create the manager", "the controller did not start within 2s"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, seen := stalledAPIServer(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, cfg, Options{
					WatchNamespaces: tc.watch, DisableWebhooks: true, StartTimeout: tc.timeout,
					MetricsBindAddress: "0", HealthProbeBindAddress: "0",
				})
			}()
			select {
			case <-seen: // the controller waits on the API server
			case err := <-done:
				t.Fatalf("Run returned before asking the API server anything: %v", err)
			case <-time.After(time.Minute):
				t.Fatal("the controller sent the API server no request within a minute")
			}
			if tc.cancel {
				cancel()
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("Run did not return within a minute of its context's end: the start ignores its context")
			}
			if err == nil {
				t.Fatal("Run returned nil; want an error naming what it waited for")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run's error does not say %q:\n%v", w, err)
				}
			}
			if tc.cancel && !errors.Is(err, context.Canceled) {
				t.Errorf("Run's error does not wrap context.Canceled: %v", err)
			}
		})
	}
}
