package requests

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/test/gateway"
	"github.com/opendatahub-io/odh-serving/test/testenv"
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

// BenchmarkMoveToV1 counts the requests that fail while a service's route
// moves from dual to v1 (its backend weights from the v1alpha2 to the v1
// InferencePool, as the controller writes them) under 20 requests a
// second through the test gateway and GIE's endpoint picker. Each
// iteration puts the dual route back (untimed, until the gateway sends to
// the v1alpha2 pool), then sends for a second, applies the v1 route, and
// sends until the gateway has sent to the v1 pool for a second. It reports
// requests and failed requests per move (the goal is 0 failed), and the
// time from the route's update to the first answer through the v1 pool.
//
//	go test ./test/requests -run '^$' -bench MoveToV1 -benchtime 5x
func BenchmarkMoveToV1(b *testing.B) {
	e := startPhase(b, convention.PhaseDual, phaseOptions{})
	routeOf := func(phase convention.Phase) *gatewayv1.HTTPRoute {
		for _, o := range render(b, e.svc, phase, false).Objects {
			if rt, ok := o.(*gatewayv1.HTTPRoute); ok {
				return rt
			}
		}
		b.Fatalf("phase %s renders no HTTPRoute", phase)
		return nil
	}
	dual, v1 := routeOf(convention.PhaseDual), routeOf(convention.PhaseV1)
	apply := func(want *gatewayv1.HTTPRoute) {
		live := &gatewayv1.HTTPRoute{}
		if err := e.c.Get(b.Context(), client.ObjectKeyFromObject(want), live); err != nil {
			b.Fatal(err)
		}
		live.Spec, live.Annotations = want.Spec, want.Annotations
		if err := e.c.Update(b.Context(), live); err != nil {
			b.Fatal(err)
		}
	}
	const body = `{"model":"Qwen/Qwen2.5-7B-Instruct","prompt":"hi","max_tokens":5}`
	send := func() (backend string, err error) {
		resp, err := http.Post(e.url, "application/json", strings.NewReader(body))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("status %d: %s", resp.StatusCode, out)
		}
		return resp.Header.Get(gateway.BackendHeader), nil
	}
	v1Group := "." + gieapiv1.GroupVersion.Group
	var sent, failed int
	var toV1 time.Duration
	var failures []string
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		apply(dual)
		testenv.Eventually(b, "the gateway sends to the v1alpha2 pool", func() error {
			if backend, err := send(); err != nil || strings.HasSuffix(backend, v1Group) {
				return fmt.Errorf("backend %q: %w", backend, err)
			}
			return nil
		})
		b.StartTimer()
		var mu sync.Mutex
		var wg sync.WaitGroup
		var movedAt, firstV1 time.Time
		tick := time.NewTicker(time.Second / 20)
		start := time.Now()
		// At most 30 s a move: the loop is bounded even if the route never
		// moves.
		for now := range tick.C {
			mu.Lock()
			done := !firstV1.IsZero() && now.Sub(firstV1) >= time.Second
			mu.Unlock()
			if done || now.Sub(start) > 30*time.Second {
				break
			}
			if movedAt.IsZero() && now.Sub(start) >= time.Second {
				apply(v1)
				movedAt = now
			}
			wg.Go(func() {
				backend, err := send()
				mu.Lock()
				defer mu.Unlock()
				sent++
				switch {
				case err != nil:
					failed++
					if len(failures) < 5 {
						failures = append(failures, err.Error())
					}
				case strings.HasSuffix(backend, v1Group) && firstV1.IsZero():
					firstV1 = time.Now()
				}
			})
		}
		tick.Stop()
		wg.Wait()
		if firstV1.IsZero() {
			b.Fatal("no request went to the v1 pool within 30 s of the move")
		}
		toV1 += firstV1.Sub(movedAt)
	}
	b.ReportMetric(float64(sent)/float64(b.N), "requests/op")
	b.ReportMetric(float64(failed)/float64(b.N), "failed/op")
	b.ReportMetric(float64(toV1.Milliseconds())/float64(b.N), "ms-to-v1")
	if failed > 0 {
		b.Logf("%d of %d requests failed during the moves; the first: %s", failed, sent, strings.Join(failures, "; "))
	}
}
