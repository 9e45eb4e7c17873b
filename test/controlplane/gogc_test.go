package controlplane

import (
	"testing"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestBenchmarking(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"-test.run=TestX", "-test.count=1"}, false},
		{[]string{"-test.benchtime=1x"}, false},
		{[]string{"-test.bench="}, false},
		{[]string{"-test.bench=."}, true},
		{[]string{"-test.run=^$", "-test.bench", "^BenchmarkListModels$"}, true},
		{[]string{"--test.bench=Converge"}, true},
	} {
		if got := benchmarking(c.args); got != c.want {
			t.Errorf("benchmarking(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
