package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/opendatahub-io/odh-serving/internal/version"
)

// Streams are where a command reads and writes.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Main runs the command line with args and returns the exit code.
func Main(args []string, s Streams) int {
	root := newRoot(s)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintf(s.Err, "error: %v\n", err)
		return 1
	}
	return 0
}

func newRoot(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "odh-serving",
		Short:         "Run LLMs on Kubernetes with the Gateway API Inference Extension",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(newRender(s), newPresets(s), newPostRender(s), newCRDs(s))
	root.AddCommand(newController(s), newStatus(s), newVersion(s))
	return root
}
