package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RateLimiter decides, for a request an Authorizer let through, whether
// it is within its limits: the place where Envoy asks Limitador.
type RateLimiter interface {
	Limit(ctx context.Context, req *http.Request, at AuthTarget) (Verdict, error)
}

// RateLimitPolicyGVK is Kuadrant's RateLimitPolicy.
var RateLimitPolicyGVK = schema.GroupVersionKind{Group: "kuadrant.io", Version: "v1", Kind: "RateLimitPolicy"}

// RateLimitHeader names, on a 429, the RateLimitPolicy whose limit the
// request is over (test tooling: Limitador does not say).
const RateLimitHeader = "X-Test-Gateway-Ratelimitpolicy"

// RateLimitPolicies is a RateLimiter that enforces Kuadrant
// RateLimitPolicies as Limitador counts, as far as test tooling models
// them (docs/auth.md, "The test gateway"): the one policy in effect on the
// request's path (EffectivePolicy, as for AuthPolicies), each of its
// limits a fixed window per rate that starts with the window's first
// request; a request is over when any of its counters would exceed its
// limit, and then counts on none (Limitador's check and update); over:
// 429. A limit's counters are CEL expressions Kuadrant evaluates per
// request; the one applied here is source.remote_address, the client's
// address without the port (Kuadrant's well-known attribute; the test
// gateway trusts no X-Forwarded-For, so it is the connection's peer). A
// limit without counters is one counter for every request. Limits with
// when predicates, and other counters, are an error: the gateway answers
// 500, never lets the request through unlimited. No policy on the path, or
// no RateLimitPolicy CRD: no limit.
type RateLimitPolicies struct {
	// Reader lists RateLimitPolicies (the gateway's cache).
	Reader client.Reader
	// Now is the clock; nil: time.Now.
	Now func() time.Time

	mu       *sync.Mutex
	counters map[string]*window
}

// window is one counter: its hits since start.
type window struct {
	start time.Time
	hits  int64
}

// NewRateLimitPolicies returns a RateLimitPolicies reading from reader.
func NewRateLimitPolicies(reader client.Reader) RateLimitPolicies {
	return RateLimitPolicies{Reader: reader, mu: &sync.Mutex{}, counters: map[string]*window{}}
}

// rateLimits are a policy's limits, the fields applied here.
type rateLimits map[string]struct {
	Rates []struct {
		Limit  int64  `json:"limit"`
		Window string `json:"window"`
	} `json:"rates"`
	Counters []struct {
		Expression string `json:"expression"`
	} `json:"counters,omitempty"`
}

// SourceRemoteAddress is the one counter expression applied.
const SourceRemoteAddress = "source.remote_address"

// Limit counts req against the policy in effect on at.
func (l RateLimitPolicies) Limit(ctx context.Context, req *http.Request, at AuthTarget) (Verdict, error) {
	if l.mu == nil {
		return Verdict{}, errors.New("RateLimitPolicies: made without NewRateLimitPolicies")
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(RateLimitPolicyGVK.GroupVersion().WithKind(RateLimitPolicyGVK.Kind + "List"))
	if err := l.Reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return Verdict{Code: http.StatusOK}, nil
		}
		return Verdict{}, fmt.Errorf("list RateLimitPolicies: %w", err)
	}
	policy, err := EffectivePolicy(list.Items, at)
	if err != nil || policy == nil {
		return Verdict{Code: http.StatusOK}, err
	}
	name := policy.GetNamespace() + "/" + policy.GetName()
	limits, err := parseLimits(policy)
	if err != nil {
		return Verdict{}, fmt.Errorf("RateLimitPolicy %s: %w", name, err)
	}
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return Verdict{}, fmt.Errorf("RateLimitPolicy %s: the client's address %q: %w", name, req.RemoteAddr, err)
	}
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	type hit struct {
		key         string
		limit       int64
		duration    time.Duration
		limitName   string
		description string
	}
	var hits []hit
	for _, limitName := range sortedNames(limits) {
		lim := limits[limitName]
		var values []string
		for _, c := range lim.Counters {
			values = append(values, c.Expression+"="+host)
		}
		for i, rate := range lim.Rates {
			d, err := time.ParseDuration(rate.Window)
			if err != nil {
				return Verdict{}, fmt.Errorf("RateLimitPolicy %s: limits.%s.rates[%d].window %q: %w", name, limitName, i, rate.Window, err)
			}
			if d <= 0 {
				return Verdict{}, fmt.Errorf("RateLimitPolicy %s: limits.%s.rates[%d].window %q: not a positive duration", name, limitName, i, rate.Window)
			}
			hits = append(hits, hit{
				key:   fmt.Sprintf("%s/%s/%s/%d/%s", name, policy.GetUID(), limitName, i, strings.Join(values, ",")),
				limit: rate.Limit, duration: d, limitName: limitName,
				description: fmt.Sprintf("limits.%s: %d per %s", limitName, rate.Limit, rate.Window),
			})
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range hits {
		w := l.counters[h.key]
		if w != nil && !now.Before(w.start.Add(h.duration)) {
			w = nil
		}
		if (w == nil && h.limit < 1) || (w != nil && w.hits+1 > h.limit) {
			return Verdict{Code: http.StatusTooManyRequests, Policy: name, Reason: "over " + h.description}, nil
		}
	}
	for _, h := range hits {
		w := l.counters[h.key]
		if w == nil || !now.Before(w.start.Add(h.duration)) {
			w = &window{start: now}
			l.counters[h.key] = w
		}
		w.hits++
	}
	return Verdict{Code: http.StatusOK, Policy: name}, nil
}

// parseLimits reads the limits in effect of a RateLimitPolicy
// (spec.limits, or spec.defaults.limits or spec.overrides.limits).
func parseLimits(policy *unstructured.Unstructured) (rateLimits, error) {
	var raw map[string]any
	for _, path := range [][]string{{"spec", "limits"}, {"spec", "defaults", "limits"}, {"spec", "overrides", "limits"}} {
		if m, ok, _ := unstructured.NestedMap(policy.Object, path...); ok {
			raw = m
			break
		}
	}
	if raw == nil {
		return nil, errors.New("no limits")
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var limits rateLimits
	if err := dec.Decode(&limits); err != nil {
		return nil, fmt.Errorf("limits this test gateway does not apply (when predicates?): %w", err)
	}
	for name, lim := range limits {
		if len(lim.Rates) == 0 {
			return nil, fmt.Errorf("limits.%s: no rates", name)
		}
		for i, c := range lim.Counters {
			if strings.TrimSpace(c.Expression) != SourceRemoteAddress {
				return nil, fmt.Errorf("limits.%s.counters[%d] %q: the test gateway applies %s only", name, i, c.Expression, SourceRemoteAddress)
			}
		}
	}
	return limits, nil
}

func sortedNames(m rateLimits) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// rateLimit asks the RateLimiter, if there is one, and answers a request
// over its limit; false when the request does not go on.
func (r *Router) rateLimit(w http.ResponseWriter, req *http.Request, at AuthTarget) bool {
	if r.opts.RateLimiter == nil {
		return true
	}
	v, err := r.opts.RateLimiter.Limit(req.Context(), req, at)
	if err != nil {
		// Fail closed: a limit the gateway cannot apply lets nothing
		// through.
		r.fail(w, http.StatusInternalServerError, "HTTPRoute %s/%s: rate limit: %v", at.Route.Namespace, at.Route.Name, err)
		return false
	}
	if v.Code == http.StatusOK {
		return true
	}
	w.Header().Set(RateLimitHeader, v.Policy)
	http.Error(w, fmt.Sprintf("%s by RateLimitPolicy %s: %s", http.StatusText(v.Code), v.Policy, v.Reason), v.Code)
	return false
}

var _ RateLimiter = RateLimitPolicies{}
