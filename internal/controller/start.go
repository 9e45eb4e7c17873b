package controller

import (
	"context"
	"fmt"
	"time"
)

// DefaultStartTimeout bounds the start: what Run reads from the API server
// and registers before the manager runs (the CRDs served, the REST
// mappings the indexes need, the webhook's certificate). Past it Run
// returns an error naming the step, and the pod is restarted, rather than
// hang on an API server that accepts connections and never answers.
const DefaultStartTimeout = 2 * time.Minute

// startStep runs one step of the start that may wait on the API server, and
// returns its error, or, as soon as ctx is done, an error naming the step
// and ctx's cause (a SIGTERM, or the start timing out).
//
// The step cannot always be stopped: controller-runtime's REST mapper asks
// discovery with no context, so a stalled API server holds it whatever ctx
// says. The step is then left behind, blocked on its request; Run returns,
// and the process with it.
func startStep(ctx context.Context, what string, step func(context.Context) error) error {
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("%s: not started: %w", what, err)
	}
	done := make(chan error, 1)
	go func() { done <- step(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: gave up waiting on the API server: %w", what, context.Cause(ctx))
	}
}

// startContext is ctx bounded by timeout, with a cause that says so.
func startContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, timeout, fmt.Errorf("the controller did not start within %s", timeout))
}
