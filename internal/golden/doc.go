// Package golden compares test output with files under testdata/ and
// rewrites them when the tests run with -update:
//
//	go test ./... -update
//
// Review every rewritten file in the diff before committing it.
package golden
