package cli_test

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opendatahub-io/odh-serving/internal/cli"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// pdStream is a stream like the odh-serving chart's: the shipped presets
// as LLMInferenceServiceConfig objects in the system namespace (the chart
// installs them), then n prefill/decode services, each a copy of
// examples/prefill-decode.yaml under its own name.
func pdStream(tb testing.TB, n int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	files, err := filepath.Glob("../../presets/*/preset.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no presets: %v", err)
	}
	for _, file := range files {
		p := golden.Read(tb, file)
		name := filepath.Base(filepath.Dir(file))
		fmt.Fprintf(&buf, "---\n# Source: odh-serving/templates/presets.yaml\n%s",
			strings.Replace(string(p), "  name: "+name+"\n", "  name: kserve-"+name+"\n  namespace: opendatahub\n", 1))
	}
	svc := golden.Read(tb, "../../examples/prefill-decode.yaml")
	for i := range n {
		fmt.Fprintf(&buf, "---\n# Source: odh-serving/templates/llminferenceservices.yaml\n%s",
			strings.Replace(string(svc), "name: llama-pd\n", fmt.Sprintf("name: llama-pd-%04d\n", i), 1))
	}
	return buf.Bytes()
}

// BenchmarkPostRender runs `post-render --mode static` over the shipped
// presets and 1, 100 and 1,000 prefill/decode services: decode the stream,
// load the built-in presets,
// render every service (on every core), write the stream and the children
// as YAML. ns/service is the wall time per service; cpu-ns/service the
// processor time of all threads per service (user + system, from
// getrusage), which a busy shared host disturbs less.
// Run: go test ./internal/cli -run '^$' -bench PostRender -benchtime 5x.
func BenchmarkPostRender(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			stream := pdStream(b, n)
			b.ReportAllocs()
			b.SetBytes(int64(len(stream)))
			start, cpuStart := time.Now(), cpuTime(b)
			for b.Loop() {
				var stderr bytes.Buffer
				s := cli.Streams{In: bytes.NewReader(stream), Out: io.Discard, Err: &stderr}
				if code := cli.Main([]string{"post-render", "--mode", "static"}, s); code != 0 {
					b.Fatalf("exit %d: %s", code, stderr.String())
				}
			}
			perService := float64(b.N) * float64(n)
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/perService, "ns/service")
			b.ReportMetric(float64((cpuTime(b)-cpuStart).Nanoseconds())/perService, "cpu-ns/service")
		})
	}
}

// cpuTime is the processor time the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
