package cli

import "context"

// ctxBackground is the context of a one-shot command.
func ctxBackground() context.Context { return context.Background() }
