// Package x has the same name as a/x: their test binaries are both x.test.
package x

import (
	"os"
	"testing"
)

// TestPass passes when it runs in its package's directory, as go test runs it.
func TestPass(t *testing.T) {
	if _, err := os.ReadFile("here.txt"); err != nil {
		t.Fatal(err)
	}
	t.Log("package b/x")
}
