package main

import (
	"strings"
	"testing"
)

// TestCoverageGap: without a routable host address the demo test names
// what it leaves out, skipping, and fails instead when CI is set.
func TestCoverageGap(t *testing.T) {
	if skip, fatal := coverageGap(nil, true); skip != "" || fatal != "" {
		t.Errorf("with a host address: skip %q, fatal %q; want neither", skip, fatal)
	}
	for _, ci := range []bool{false, true} {
		skip, fatal := coverageGap(errLoopbackOnly, ci)
		got := skip
		if ci {
			got = fatal
			if skip != "" {
				t.Errorf("CI set: skip %q, want a failure only", skip)
			}
		} else if fatal != "" {
			t.Errorf("CI unset: fatal %q, want a skip only", fatal)
		}
		for _, want := range []string{"without the validating and conversion webhooks", "without Models-as-a-Service", errLoopbackOnly.Error()} {
			if !strings.Contains(got, want) {
				t.Errorf("CI %t: %q lacks %q", ci, got, want)
			}
		}
	}
}
