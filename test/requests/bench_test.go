package requests

import (
	"crypto/tls"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// BenchmarkAddedLatency measures what the test gateway and GIE's endpoint
// picker add to a completion: the same request sent straight to a pod and
// through the gateway, one at a time, with model servers that answer in
// 1 ms. It reports p50 and p99 of each, and requests per second.
//
//	go test ./test/requests -run '^$' -bench AddedLatency -benchtime 500x
func BenchmarkAddedLatency(b *testing.B) {
	e := startPhase(b, convention.PhaseV1, phaseOptions{responseTime: time.Millisecond})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the pods' certificate is the test's
	const body = `{"model":"Qwen/Qwen2.5-7B-Instruct","prompt":"hi","max_tokens":5}`
	for _, c := range []struct{ name, url string }{{"direct", e.pods[0]}, {"gateway+epp", e.url}} {
		b.Run(c.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				resp, err := client.Post(c.url, "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
	if l := e.gwLog.String(); l != "" {
		b.Errorf("the gateway did not take every request through the endpoint picker:\n%s", l)
	}
}
