package modelserver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// load is a pod's requests in flight, shared by all its ports: what the
// metrics report.
type load struct {
	maxRunning int
	slots      chan struct{}

	mu      sync.Mutex
	running int
	waiting int
	// adapters in flight, by name: running and waiting.
	runningLoRA map[string]int
	waitingLoRA map[string]int
	served      int
}

func newLoad(maxRunning int) *load {
	return &load{maxRunning: maxRunning, slots: make(chan struct{}, maxRunning), runningLoRA: map[string]int{}, waitingLoRA: map[string]int{}}
}

// admit waits for a slot (counted as waiting meanwhile) and returns the
// function that frees it; false when ctx ends first.
func (l *load) admit(ctx context.Context, adapter string) (func(), bool) {
	l.add(&l.waiting, l.waitingLoRA, adapter, 1)
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		l.add(&l.waiting, l.waitingLoRA, adapter, -1)
		return nil, false
	}
	l.mu.Lock()
	l.waiting--
	dec(l.waitingLoRA, adapter)
	l.running++
	if adapter != "" {
		l.runningLoRA[adapter]++
	}
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.running--
		l.served++
		dec(l.runningLoRA, adapter)
		l.mu.Unlock()
		<-l.slots
	}, true
}

func (l *load) add(n *int, byAdapter map[string]int, adapter string, d int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*n += d
	if adapter == "" {
		return
	}
	if d > 0 {
		byAdapter[adapter] += d
	} else {
		dec(byAdapter, adapter)
	}
}

func dec(m map[string]int, k string) {
	if k == "" {
		return
	}
	if m[k] <= 1 {
		delete(m, k)
	} else {
		m[k]--
	}
}

// Stats is a snapshot of a pod's load.
type Stats struct {
	Running, Waiting int
	// Served counts the completions answered.
	Served int
}

func (l *load) stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Running: l.running, Waiting: l.waiting, Served: l.served}
}

// podServer serves one pod at its IP on each of its ports.
type podServer struct {
	namespace, name, ip string
	model               Model
	ports               []Port
	opts                Options
	load                *load
	// received are the requests the pod got, headers and all.
	received received
	servers  []*http.Server
	// version tells a changed pod from the one being served: the pod's
	// IP, model and ports.
	version string
	done    sync.WaitGroup
}

// start listens on every port; nothing is left listening when it fails.
func (s *podServer) start(certs func(Port) (*tls.Certificate, error)) error {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", s.completions(false))
	mux.HandleFunc("POST /v1/chat/completions", s.completions(true))
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /metrics", s.metrics)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.received.add(s.namespace+"/"+s.name, r)
		w.Header().Set("X-Model-Server-Pod", s.name)
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			w.Header().Set("X-Model-Server-Address", a.String())
		}
		mux.ServeHTTP(w, r)
	})
	for _, p := range s.ports {
		addr := net.JoinHostPort(s.ip, strconv.Itoa(int(p.Number)))
		// A client that drops a connection is not worth a line in the log.
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
		var ln net.Listener
		var err error
		if p.TLS() {
			var cert *tls.Certificate
			if cert, err = certs(p); err == nil {
				ln, err = tls.Listen("tcp", addr, &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
			}
		} else {
			ln, err = net.Listen("tcp", addr)
		}
		if err != nil {
			s.stop()
			return fmt.Errorf("pod %s/%s: serve %s (container %s): %w", s.namespace, s.name, addr, p.Container, err)
		}
		s.servers = append(s.servers, srv)
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			_ = srv.Serve(ln)
		}()
	}
	return nil
}

// stop closes the listeners and the connections, and waits for the
// servers to return.
func (s *podServer) stop() {
	for _, srv := range s.servers {
		_ = srv.Close()
	}
	s.done.Wait()
	s.servers = nil
}

type openAIError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   string `json:"param,omitempty"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, code int, typ, param, msg string) {
	var e openAIError
	e.Error.Message, e.Error.Type, e.Error.Param, e.Error.Code = msg, typ, param, code
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(e)
}

// completions answers a completion or a chat completion, after waiting its
// turn and Options.ResponseTime.
func (s *podServer) completions(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", "", "cannot read the request body: "+err.Error())
			return
		}
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", "", "the request body is not JSON: "+err.Error())
			return
		}
		if req.Model == "" {
			writeError(w, http.StatusBadRequest, "BadRequestError", "model", "no model in the request")
			return
		}
		if !s.model.Serves(req.Model) {
			writeError(w, http.StatusNotFound, "NotFoundError", "model", fmt.Sprintf("The model `%s` does not exist.", req.Model))
			return
		}
		adapter := ""
		if s.model.IsAdapter(req.Model) {
			adapter = req.Model
		}
		release, ok := s.load.admit(r.Context(), adapter)
		if !ok {
			return
		}
		defer release()
		select {
		case <-time.After(s.opts.ResponseTime):
		case <-r.Context().Done():
			return
		}
		text := fmt.Sprintf("answered by pod %s/%s", s.namespace, s.name)
		id := fmt.Sprintf("cmpl-%s-%d", s.name, time.Now().UnixNano())
		object := "text_completion"
		if chat {
			object = "chat.completion"
		}
		choice := func(delta bool, content string, finish *string) map[string]any {
			c := map[string]any{"index": 0, "finish_reason": finish}
			switch {
			case !chat:
				c["text"] = content
			case delta:
				c["delta"] = map[string]any{"role": "assistant", "content": content}
			default:
				c["message"] = map[string]any{"role": "assistant", "content": content}
			}
			return c
		}
		stop := "stop"
		usage := map[string]int{"prompt_tokens": 1, "completion_tokens": len(strings.Fields(text)), "total_tokens": 1 + len(strings.Fields(text))}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{
				"id": id, "object": object, "created": time.Now().Unix(), "model": req.Model,
				"choices": []any{choice(false, text, &stop)}, "usage": usage,
			})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		flusher, _ := w.(http.Flusher)
		chunkObject := object
		if chat {
			chunkObject = "chat.completion.chunk"
		}
		words := strings.Fields(text)
		for i, word := range words {
			var finish *string
			if i == len(words)-1 {
				finish = &stop
			}
			if i > 0 {
				word = " " + word
			}
			chunk, _ := json.Marshal(map[string]any{"id": id, "object": chunkObject, "created": time.Now().Unix(), "model": req.Model, "choices": []any{choice(true, word, finish)}})
			if _, err := fmt.Fprintf(w, "data: %s\n\n", chunk); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		final, _ := json.Marshal(map[string]any{"id": id, "object": chunkObject, "created": time.Now().Unix(), "model": req.Model, "choices": []any{}, "usage": usage})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", final)
	}
}

// models lists the served names and the adapters, as vLLM does.
func (s *podServer) models(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID      string  `json:"id"`
		Object  string  `json:"object"`
		Created int64   `json:"created"`
		OwnedBy string  `json:"owned_by"`
		Root    string  `json:"root"`
		Parent  *string `json:"parent"`
	}
	now := time.Now().Unix()
	var data []model
	for _, n := range s.model.Names {
		data = append(data, model{ID: n, Object: "model", Created: now, OwnedBy: "vllm", Root: s.model.Names[0]})
	}
	for _, a := range s.model.Adapters {
		data = append(data, model{ID: a, Object: "model", Created: now, OwnedBy: "vllm", Root: a, Parent: &s.model.Names[0]})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

// metrics writes vLLM's metrics that endpoint pickers read, in the
// Prometheus text format.
func (s *podServer) metrics(w http.ResponseWriter, _ *http.Request) {
	s.load.mu.Lock()
	running, waiting := s.load.running, s.load.waiting
	runningLoRA, waitingLoRA := keys(s.load.runningLoRA), keys(s.load.waitingLoRA)
	s.load.mu.Unlock()
	model := s.model.Names[0]
	label := fmt.Sprintf(`{model_name=%q}`, model)
	var b strings.Builder
	gauge := func(name, help, labels string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s%s %s\n", name, help, name, name, labels, strconv.FormatFloat(v, 'g', -1, 64))
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", label, float64(running))
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", label, float64(waiting))
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", label, float64(running)/float64(s.load.maxRunning))
	gauge("vllm:lora_requests_info", "Running stats on lora requests.",
		fmt.Sprintf(`{max_lora=%q,running_lora_adapters=%q,waiting_lora_adapters=%q}`, strconv.Itoa(s.model.MaxLoRAs), strings.Join(runningLoRA, ","), strings.Join(waitingLoRA, ",")),
		float64(time.Now().UnixNano())/1e9)
	gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig.",
		fmt.Sprintf(`{block_size="16",num_gpu_blocks=%q}`, strconv.Itoa(s.load.maxRunning*64)), 1)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = io.WriteString(w, b.String())
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var errNoCertificate = errors.New("no certificate")
