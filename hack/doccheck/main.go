package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	root := flag.String("root", ".", "the repository")
	flag.Parse()
	if err := check(*root); err != nil {
		for _, e := range leaves(err) {
			fmt.Fprintln(os.Stderr, "doccheck:", e)
		}
		os.Exit(1)
	}
}

// check runs every check on the repository at root.
func check(root string) error {
	return errors.Join(checkDemoSteps(root), checkLayout(root))
}

// leaves splits a joined error into its errors, one per drift.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}
