package cli

import "github.com/opendatahub-io/odh-serving/internal/cli/offline"

// Streams are where a command reads and writes.
type Streams = offline.Streams

// Main runs the command line with args and returns the exit code. The
// commands run under a context that SIGINT and SIGTERM cancel.
func Main(args []string, s Streams) int {
	root := offline.Root(s, "odh-serving", "Run LLMs on Kubernetes with the Gateway API Inference Extension")
	root.AddCommand(newPresets(s), newCRDs(s), newController(s), newStatus(s), newAPIServer(s), newUninstall(s))
	return offline.Execute(root, args, s)
}
