// Package golden compares test output with files under testdata/ and
// rewrites them when the tests run with -update:
//
//	go test ./... -update
//
// A run with -update fails for each file it rewrote, naming it, so that a
// run that changed goldens is never green: review every rewritten file in
// the diff, then run the tests again without -update. -update is refused
// when CI is set, and output holding the test binary's name (client-go's
// default field manager) fails with or without it: goldens hold nothing
// that depends on the machine or on how the binary was built.
//
// It also holds what the tests over a corpus of testdata files, and table
// tests, share: Glob finds the cases, WantError reads the message a
// bad-input file expects from its first line, ErrorCase checks a case's
// error against the one it wants, Leaves splits a joined error so that
// each error can be held to the rule, and JSON writes a value so that a
// diff shows its fields.
package golden
