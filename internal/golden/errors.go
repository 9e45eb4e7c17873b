package golden

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"
)

// errorLine starts the first line of a bad-input file: the rest of the line
// is the message the input must fail with.
const errorLine = "# error: "

// WantError reads a bad-input file and returns the message on its first line
// ("# error: <expected message>") and the whole file. It fails the test when
// the file cannot be read or does not start with that line.
func WantError(tb testing.TB, file string) (want string, data []byte) {
	tb.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	first, _, _ := bufio.NewReader(bytes.NewReader(data)).ReadLine()
	want, ok := strings.CutPrefix(string(first), errorLine)
	if !ok {
		tb.Fatalf("%s must start with '%s<expected message>'", file, errorLine)
	}
	return want, data
}

// ErrorCase checks err for a table case that wants an error containing
// want, or no error when want is "". It reports whether the case wanted an
// error, so that the caller stops there. An error the case does not want,
// or a missing or different one, fails the test.
func ErrorCase(tb testing.TB, err error, want string) bool {
	tb.Helper()
	if want == "" {
		if err != nil {
			tb.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		tb.Fatalf("error %v, want one containing %q", err, want)
	}
	return true
}

// Leaves returns the errors errors.Join put together in err, at any depth,
// or err itself: a test that holds every error to a rule checks each leaf.
func Leaves(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range joined.Unwrap() {
			out = append(out, Leaves(e)...)
		}
		return out
	}
	return []error{err}
}
