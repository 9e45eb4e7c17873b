package testenv

import (
	"os"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
)

// Documents reads the YAML stream in file (a golden, a rendered chart) and
// splits it into its documents, failing the test if it cannot.
func Documents(tb testing.TB, file string) []manifest.Document {
	tb.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	docs, err := manifest.Split(file, data)
	if err != nil {
		tb.Fatal(err)
	}
	return docs
}
