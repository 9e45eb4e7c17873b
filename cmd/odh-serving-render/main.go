// Command odh-serving-render is odh-serving's render and post-render
// without the controller: the same commands and flags as `odh-serving
// render`, `odh-serving post-render` and `odh-serving version`, in a
// binary that links no controller, webhook, client-go or CRD validation,
// so it starts in a few milliseconds. Helm runs it once per install,
// upgrade or template as the post-renderer (plugin/odh-serving).
package main

import (
	"os"

	"github.com/opendatahub-io/odh-serving/internal/cli/offline"
)

func main() {
	os.Exit(offline.Main(os.Args[1:], offline.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
