// Command odh-serving renders, post-renders and reconciles
// LLMInferenceServices. See `odh-serving --help`.
package main

import (
	"os"

	"github.com/opendatahub-io/odh-serving/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
