// Command hello is a small stand-in for odh-serving in the imagebuild tests:
// it builds in a second and has one module dependency for the SBOM.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
)

func main() {
	fs := pflag.NewFlagSet("hello", pflag.ExitOnError)
	name := fs.String("name", "world", "who to greet")
	_ = fs.Parse(os.Args[1:])
	fmt.Println("hello,", *name)
}
