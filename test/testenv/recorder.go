package testenv

import (
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IsWrite reports whether a request with method may change something: a
// POST, PUT, PATCH or DELETE. Gets, lists and watches are GETs.
func IsWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// Recorder records the writes (IsWrite) that pass through the transports
// it wraps, as "METHOD path", counts every request by verb (Verb), and can
// answer chosen writes with a 409 Conflict instead of sending them.
// Set it on a rest.Config with Wrap; it is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	writes []string
	taken  int
	verbs  map[string]int
	// conflict, when set, is asked about each write; true answers 409.
	conflict func(method, path string) bool
}

// Wrap records through next; it is a rest.Config's WrapTransport.
func (r *Recorder) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		if r.verbs == nil {
			r.verbs = map[string]int{}
		}
		r.verbs[Verb(req)]++
		write := IsWrite(req.Method)
		if write {
			r.writes = append(r.writes, req.Method+" "+req.URL.Path)
		}
		fail := write && r.conflict != nil && r.conflict(req.Method, req.URL.Path)
		r.mu.Unlock()
		if fail {
			return conflictResponse(req), nil
		}
		return next.RoundTrip(req)
	})
}

// Config is a copy of cfg whose requests r records.
func (r *Recorder) Config(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.WrapTransport = r.Wrap
	return out
}

// Count is how many writes r has seen.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writes)
}

// Since returns the writes after the first n, in order.
func (r *Recorder) Since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes[n:]...)
}

// Take returns the writes since the last Take.
func (r *Recorder) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.writes[r.taken:]...)
	r.taken = len(r.writes)
	return out
}

// Verbs returns how many requests r has seen by verb.
func (r *Recorder) Verbs() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.verbs)
}

// Verb names a request as the API server's verbs do, but for lists, which
// are gets: get, watch, create, update, patch or delete (or the method, in
// lower case, for anything else).
func Verb(req *http.Request) string {
	switch req.Method {
	case http.MethodGet:
		if req.URL.Query().Get("watch") == "true" {
			return "watch"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(req.Method)
}

// SetConflict makes r answer the writes for which conflict returns true
// with a 409 Conflict; nil sends every write again.
func (r *Recorder) SetConflict(conflict func(method, path string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conflict = conflict
}

// FailFirst makes r answer the first n writes with method to a path that
// ends in suffix with a 409 Conflict, as SetConflict does, and returns how
// many it has answered so far.
func (r *Recorder) FailFirst(n int, method, suffix string) (failed func() int) {
	count := 0
	r.SetConflict(func(m, path string) bool { // called with r.mu held
		if count < n && m == method && strings.HasSuffix(path, suffix) {
			count++
			return true
		}
		return false
	})
	return func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return count
	}
}

// RecordingClient is a client of cfg's API server whose requests a new
// Recorder records.
func RecordingClient(tb testing.TB, cfg *rest.Config, scheme *runtime.Scheme) (client.Client, *Recorder) {
	tb.Helper()
	r := &Recorder{}
	c, err := client.New(r.Config(cfg), client.Options{Scheme: scheme})
	if err != nil {
		tb.Fatal(err)
	}
	return c, r
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func conflictResponse(req *http.Request) *http.Response {
	body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected conflict","reason":"Conflict","code":409}`
	return &http.Response{
		StatusCode: http.StatusConflict, Status: "409 Conflict", Request: req,
		Header: http.Header{"Content-Type": []string{"application/json"}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)),
	}
}
