package offline

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/opendatahub-io/odh-serving/internal/version"
)

// Streams are where a command reads and writes.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Main runs the render-only command line with args and returns the exit
// code.
func Main(args []string, s Streams) int {
	return Execute(Root(s, "odh-serving-render",
		"Render LLMInferenceServices without a cluster, and post-render Helm streams"), args, s)
}

// Root is the root command with render, post-render and version; callers
// add more.
func Root(s Streams, use, short string) *cobra.Command {
	root := &cobra.Command{
		Use:           use,
		Short:         short,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(NewRender(s), NewPostRender(s), NewVersion(s))
	return root
}

// Execute runs root with args under a context that SIGINT and SIGTERM
// cancel, and returns the exit code: 1 with the error on s.Err.
func Execute(root *cobra.Command, args []string, s Streams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(s.Err, "error: %v\n", err)
		return 1
	}
	return 0
}
