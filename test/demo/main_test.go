package main

import (
	"flag"
	"os"
	"testing"

	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestMain runs the demo's processes at GOGC=400 in the tests
// (testenv.UseTestGOGC); make demo keeps Go's default.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.UseTestGOGC()
	os.Exit(m.Run())
}
