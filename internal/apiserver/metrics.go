package apiserver

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// kubeRequests counts the requests the server sends to the cluster's API
// server, by verb and resource (informers, TokenReviews,
// SubjectAccessReviews, ServiceAccounts, tokens). It is on /metrics; the
// list benchmark checks that listing models sends none.
var kubeRequests = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      "odh_serving",
	Subsystem:      "api_server",
	Name:           "kube_requests_total",
	Help:           "Requests sent to the Kubernetes API server, by verb and resource.",
	StabilityLevel: metrics.ALPHA,
}, []string{"verb", "resource"})

var registerOnce sync.Once

// registerMetrics adds the server's metrics to /metrics, once per process.
func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(kubeRequests) })
}

// countRequests wraps the transport of every client the server makes.
func countRequests(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		verb := strings.ToLower(r.Method)
		if r.URL.Query().Get("watch") == "true" {
			verb = "watch"
		}
		kubeRequests.WithLabelValues(verb, resourceOf(r.URL.Path)).Inc()
		return rt.RoundTrip(r)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// resourceOf is the resource (and subresource) of an API path:
// /api/v1/namespaces/n/serviceaccounts/s/token is serviceaccounts/token.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "other"
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "discovery"
	case 1, 2:
		return parts[0]
	}
	return parts[0] + "/" + parts[2]
}
