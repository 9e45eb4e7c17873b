package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// Scale of BenchmarkListModels.
const (
	benchServices   = 1000
	benchNamespaces = 10
	benchTiers      = 20
)

// BenchmarkListModels lists models across namespaces (kubectl get models
// -A) through the kube-apiserver as a user of one of 20 tiers, with 1,000
// published services: each published to one tier, every tenth to all. It
// reports the p50 and p90 of a list, the models listed, and the requests
// the api-server sent to the kube-apiserver per list (kube-requests/op,
// SubjectAccessReviews apart), from its kube_requests_total.
func BenchmarkListModels(b *testing.B) {
	var tiers strings.Builder
	for i := range benchTiers {
		fmt.Fprintf(&tiers, "- name: tier-%02d\n  level: %d\n  groups: [tier-%02d-users]\n", i, i, i)
	}
	setTiers(b, map[string]string{tier.ConfigMapKey: tiers.String()})
	b.Cleanup(func() { setTiers(b, map[string]string{tier.ConfigMapKey: tiersYAML}) })

	benchOnce.Do(func() {
		benchNS = make([]string, benchNamespaces)
		for i := range benchNS {
			benchNS[i] = testenv.NewNamespace(b, cp.Client, "bench")
		}
		createServices(b, benchNS)
	})
	namespaces := benchNS

	u := newUser(b, benchUser, "tier-07-users")
	// tier-07's services are i%20 == 7, none of them i%10 == 0.
	want := benchServices/benchTiers + benchServices/10
	mine := 0
	testenv.Eventually(b, "the bench user's models", func() error {
		got, err := u.listModels(b, "")
		mine = 0
		for _, n := range got {
			if slices.ContainsFunc(namespaces, func(ns string) bool { return strings.HasPrefix(n, ns+"/") }) {
				mine++
			}
		}
		if err == nil && mine != want {
			err = fmt.Errorf("lists %d of the benchmark's models, want %d", mine, want)
		}
		return err
	})

	before := serverRequests(b)
	durations := make([]time.Duration, 0, b.N)
	list := &modelv1alpha1.ModelList{}
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := u.c.List(b.Context(), list); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	after := serverRequests(b)
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(durations[len(durations)*9/10].Microseconds())/1000, "p90-ms")
	b.ReportMetric(float64(len(list.Items)), "models")
	var other, reviews float64
	for key, n := range after {
		switch d := n - before[key]; {
		case strings.Contains(key, "subjectaccessreviews"), strings.Contains(key, "tokenreviews"):
			reviews += d
		default:
			other += d
		}
	}
	b.ReportMetric(other/float64(len(durations)), "kube-requests/op")
	b.ReportMetric(reviews, "reviews")
	if other != 0 {
		b.Errorf("listing models sent %v requests to the kube-apiserver besides reviews: before %v, after %v", other, before, after)
	}
}

// The benchmark's services are made once per process (-count reuses them).
var (
	benchOnce sync.Once
	benchNS   []string
)

// createServices creates benchServices published services over
// namespaces, 8 at a time.
func createServices(b *testing.B, namespaces []string) {
	b.Helper()
	ctx := context.WithoutCancel(b.Context())
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				ns := namespaces[i%len(namespaces)]
				tiers := tiersJSON(fmt.Sprintf("tier-%02d", i%benchTiers))
				if i%10 == 0 {
					tiers = tiersJSON()
				}
				svc := &v1alpha2.LLMInferenceService{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("model-%04d", i), Namespace: ns, Annotations: map[string]string{tier.AnnotationTiers: tiers}},
					Spec:       v1alpha2.LLMInferenceServiceSpec{Model: v1alpha2.LLMModelSpec{URI: "hf://Qwen/Qwen2.5-0.5B-Instruct", Name: ptr.To(fmt.Sprintf("qwen-%04d", i))}},
				}
				err := cp.Client.Create(ctx, svc)
				if err == nil {
					svc.Status.URL = fmt.Sprintf("https://gw.example.com/%s/%s", ns, svc.Name)
					svc.Status.Addresses = []v1alpha2.Address{{Name: "gateway-external", URL: svc.Status.URL}}
					err = cp.Client.Status().Update(ctx, svc)
				}
				if err != nil {
					mu.Lock()
					failed = fmt.Errorf("service %s/%s: %w", ns, svc.Name, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range benchServices {
		work <- i
	}
	close(work)
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
}

// serverRequests reads the api-server's kube_requests_total from its
// /metrics, straight from its port as the cluster's administrator.
func serverRequests(b *testing.B) map[string]float64 {
	b.Helper()
	admin, err := tls.X509KeyPair(cp.Config.CertData, cp.Config.KeyData)
	if err != nil {
		b.Fatal(err)
	}
	code, body := direct(b, "/metrics", &admin, nil)
	if code != http.StatusOK {
		b.Fatalf("api-server /metrics: HTTP %d: %s", code, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "odh_serving_api_server_kube_requests_total{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			b.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = n
	}
	if len(out) == 0 {
		b.Fatal("the api-server's /metrics has no odh_serving_api_server_kube_requests_total")
	}
	return out
}
