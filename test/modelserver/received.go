package modelserver

import (
	"net/http"
	"sync"
)

// Received is a request as a pod's server received it: what came through
// the gateway, after every filter of the route, so that a test can check
// what reached the pod (a caller's credentials must not).
type Received struct {
	// Pod is the pod (namespace/name) that received it.
	Pod    string
	Method string
	// Path is the request's path as the pod saw it, after any rewrite.
	Path string
	// Header is a copy of the request's headers.
	Header http.Header
}

// maxReceived is how many requests a pod's server remembers: the oldest go
// first.
const maxReceived = 256

// received is the last maxReceived requests of a pod, shared by its ports.
type received struct {
	mu   sync.Mutex
	reqs []Received
}

func (r *received) add(pod string, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == maxReceived {
		r.reqs = r.reqs[1:]
	}
	r.reqs = append(r.reqs, Received{Pod: pod, Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone()})
}

func (r *received) list() []Received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Received(nil), r.reqs...)
}

// Received lists the requests the pod namespace/name received, the oldest
// first (at most the last 256), whatever the path; nil when it is not
// served.
func (f *Fleet) Received(namespace, name string) []Received {
	f.mu.Lock()
	s := f.pods[namespace+"/"+name]
	f.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.received.list()
}

// ReceivedWith lists the requests any served pod received whose header
// name has the value value, the oldest first: a test marks its request
// with a header of its own and finds it, on whichever pod the gateway
// chose.
func (f *Fleet) ReceivedWith(name, value string) []Received {
	var out []Received
	for _, key := range f.Served() {
		f.mu.Lock()
		s := f.pods[key]
		f.mu.Unlock()
		if s == nil {
			continue
		}
		for _, r := range s.received.list() {
			if r.Header.Get(name) == value {
				out = append(out, r)
			}
		}
	}
	return out
}
