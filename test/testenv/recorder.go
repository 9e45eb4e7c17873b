package testenv

import (
	"bytes"
	"fmt"
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

// Write is one write a Recorder saw.
type Write struct {
	Method, Path string
	// Body is what was sent: for a PATCH, the patch.
	Body string
	// Code is the answer's HTTP status, 0 until it came or when none did.
	Code int
}

// String is "METHOD path", as Since lists a write.
func (w Write) String() string { return w.Method + " " + w.Path }

// Recorder records the writes (IsWrite) that pass through the transports
// it wraps, with their bodies, counts every request by verb (Verb), and
// can answer chosen writes with a 409 Conflict instead of sending them.
// Set it on a rest.Config with Wrap; it is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	writes []Write
	taken  int
	verbs  map[string]int
	// conflict, when set, is asked about each write; true answers 409.
	conflict func(method, path string) bool
}

// Wrap records through next; it is a rest.Config's WrapTransport.
func (r *Recorder) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		write := IsWrite(req.Method)
		var body string
		if write {
			var err error
			if req, body, err = readBody(req); err != nil {
				return nil, err
			}
		}
		r.mu.Lock()
		if r.verbs == nil {
			r.verbs = map[string]int{}
		}
		r.verbs[Verb(req)]++
		if !write {
			r.mu.Unlock()
			return next.RoundTrip(req)
		}
		i := len(r.writes)
		r.writes = append(r.writes, Write{Method: req.Method, Path: req.URL.Path, Body: body})
		fail := r.conflict != nil && r.conflict(req.Method, req.URL.Path)
		r.mu.Unlock()
		resp, err := conflictResponse(req), error(nil)
		if !fail {
			resp, err = next.RoundTrip(req)
		}
		if resp != nil {
			r.mu.Lock()
			r.writes[i].Code = resp.StatusCode
			r.mu.Unlock()
		}
		return resp, err
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

// Since returns the writes after the first n, in order, as "METHOD path".
func (r *Recorder) Since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return names(r.writes[n:])
}

// Writes returns the writes after the first n, in order, with their
// bodies: what a test shows when a write was not expected.
func (r *Recorder) Writes(n int) []Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Write(nil), r.writes[n:]...)
}

// Take returns the writes since the last Take.
func (r *Recorder) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := names(r.writes[r.taken:])
	r.taken = len(r.writes)
	return out
}

func names(writes []Write) []string {
	out := make([]string, len(writes))
	for i, w := range writes {
		out[i] = w.String()
	}
	return out
}

// readBody reads req's body and returns a copy of req that sends it
// still, since a transport must not consume the request it was given.
func readBody(req *http.Request) (*http.Request, string, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, "", nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, "", fmt.Errorf("record %s %s: %w", req.Method, req.URL.Path, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return nil, "", fmt.Errorf("record %s %s: %w", req.Method, req.URL.Path, err)
		}
		return req, string(b), nil
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, "", fmt.Errorf("record %s %s: %w", req.Method, req.URL.Path, err)
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(b))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return out, string(b), nil
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
