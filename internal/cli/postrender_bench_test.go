package cli_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/opendatahub-io/odh-serving/internal/cli"
)

// pdStream is a Helm-like stream of n prefill/decode services, each a copy
// of examples/prefill-decode.yaml under its own name.
func pdStream(tb testing.TB, n int) []byte {
	tb.Helper()
	svc, err := os.ReadFile("../../examples/prefill-decode.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	for i := range n {
		fmt.Fprintf(&buf, "---\n# Source: odh-serving/templates/services.yaml\n%s",
			strings.Replace(string(svc), "name: llama-pd\n", fmt.Sprintf("name: llama-pd-%04d\n", i), 1))
	}
	return buf.Bytes()
}

// BenchmarkPostRender runs `post-render --mode static` over 1, 100 and
// 1,000 prefill/decode services: decode the stream, render every service,
// write the stream and the children as YAML. ns/service is the cost of
// one service. Run: go test ./internal/cli -run '^$' -bench PostRender.
func BenchmarkPostRender(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			stream := pdStream(b, n)
			b.ReportAllocs()
			b.SetBytes(int64(len(stream)))
			start := time.Now()
			for b.Loop() {
				var stderr bytes.Buffer
				s := cli.Streams{In: bytes.NewReader(stream), Out: io.Discard, Err: &stderr}
				if code := cli.Main([]string{"post-render", "--mode", "static"}, s); code != 0 {
					b.Fatalf("exit %d: %s", code, stderr.String())
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/float64(n), "ns/service")
		})
	}
}
