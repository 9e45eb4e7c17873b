// Package golden compares test output with files under testdata/ and
// rewrites them when the tests run with -update:
//
//	go test ./... -update
//
// Review every rewritten file in the diff before committing it.
//
// It also holds what the tests over a corpus of testdata files, and table
// tests, share: Glob finds the cases, WantError reads the message a
// bad-input file expects from its first line, ErrorCase checks a case's
// error against the one it wants, Leaves splits a joined error so that
// each error can be held to the rule, and JSON writes a value so that a
// diff shows its fields.
package golden
