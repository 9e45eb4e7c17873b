// Command testrun is `make test`'s test runner. It links the test binary of
// every package that has tests with `go test -c` into a directory it keeps
// (bin/test), then runs the binaries -p at a time and prints what go test
// prints: `ok` and the time for a package that passed; its whole output and
// `FAIL` for one that failed; a package's lines never mixed with another's.
//
// Why: go test links every test binary again on every run and never keeps
// one. A warm `make test` linked all 50 of ours each time: about 120 s of
// CPU and 60 s of wall time on the project's 2-core machine (2026-11-28).
// `go test -c -o DIR/` skips the link when the binary already in DIR has the
// build ID it would link (and touches it). All 50 linked: 65 s wall, 123 s
// CPU; again with nothing changed: 4.6 s wall, 6 s CPU. That needs one
// `go test -c` for many packages: one per package costs 109 s of CPU in the
// go command alone. One `-o DIR/` refuses two packages with one binary name
// (internal/controller and test/controller are both controller.test), so
// the packages go into groups with no name twice, one directory each: in
// import-path order, the first package with a name goes to DIR/0, the
// second to DIR/1, and so on. The groups are computed over every package of
// ./... so that a run of a few packages puts each binary where a full run
// does. Binaries of packages that no longer exist are removed.
//
// A package whose binary `go test -c` neither wrote nor touched did not
// build, or failed the vet checks go test runs (go test -c runs them too): it
// is reported `FAIL <package> [build failed]` after go's errors, and its old
// binary is not run.
//
// The binaries run as go test runs them (cmd/go/internal/test, builderRunTest):
// in the package's source directory with PWD set to it, with
// -test.paniconexit0, GOROOT/bin first in PATH (tests run `go`), the rest
// of the environment as given, and a SIGQUIT a minute after -test.timeout
// for a binary that hangs past its own timeout. Each also gets
// -test.count=1 -test.shuffle=on -test.timeout=10m, then the -test.* flags
// given on the command line. Output goes to an unlinked temporary file and
// is printed when the package ends. Packages start in the order given, as
// go test starts them: `make test` names its longest packages first.
//
// Usage:
//
//	go run ./hack/testrun [-p N] [-o DIR] [-build FLAGS] [-c] PACKAGES... [-test.FLAG=VALUE...]
//
// -c only links the binaries (to time the link, or to run one by hand);
// -build holds go test -c's flags, space-separated (make test: -ldflags=-w);
// each -test flag is one word (-test.run=X, not -test.run X). The exit status
// is 1 when a package failed or did not build; the last lines name them.
package main
