// Command doccheck fails when the docs drift from the code in two ways a
// reader cannot see:
//
//   - the demo's steps: the steps test/demo runs (the list in
//     (*demo).run) against test/demo's step count (const steps), the
//     numbered comments on the step functions ("// 12. ..."), the numbered
//     list under docs/demo.md's "## The steps", and every "sixteen steps"
//     (a number in words, or "17 steps" in the README) in docs/demo.md,
//     README.md and test/demo;
//   - the README's layout table: every folder of the repository that holds
//     Go files must be in it, either in a row's first cell (`test/demo/`)
//     or named in backticks in the row of a folder above it (`preset` in
//     the row of `engine/`), and every folder a first cell names must exist.
//
// `make verify` runs it (hack/verify.sh): go run ./hack/doccheck [-root DIR].
// It prints one line per drift and exits 1, or prints nothing.
package main
