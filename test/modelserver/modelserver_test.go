package modelserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/test/hostlock"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// renderedPods are the pod templates of the rendered Deployments in an
// engine golden case, by Deployment name.
func renderedPods(t *testing.T, goldenCase string) map[string]corev1.PodSpec {
	t.Helper()
	out := map[string]corev1.PodSpec{}
	for _, doc := range strings.Split(string(golden.Read(t, "../../engine/testdata/"+goldenCase+"/expected.yaml")), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		out[d.Name] = d.Spec.Template.Spec
	}
	if len(out) == 0 {
		t.Fatalf("engine golden case %s has no Deployment", goldenCase)
	}
	return out
}

// TestReadPod reads what the rendered pods serve: vLLM's bash script with
// its served names and LoRA adapters (lora), llm-d's simulator and the
// routing sidecar in front of it (cpu-pd).
func TestReadPod(t *testing.T) {
	const certFile, keyFile = "/var/run/kserve/tls/tls.crt", "/var/run/kserve/tls/tls.key"
	cases := []struct {
		goldenCase, deployment string
		model                  Model
		ports                  []Port
	}{{
		goldenCase: "lora", deployment: "llama-lora-kserve",
		model: Model{Names: []string{"llama-lora", "publishers/team-a/models/llama-lora"}, Adapters: []string{"sql"}, MaxLoRAs: 1},
		ports: []Port{{Container: "main", Number: 8000, CertFile: certFile, KeyFile: keyFile}},
	}, {
		goldenCase: "cpu-pd", deployment: "sim-pd-kserve",
		model: Model{Names: []string{"Qwen/Qwen2.5-0.5B-Instruct", "publishers/demo/models/Qwen/Qwen2.5-0.5B-Instruct"}, MaxLoRAs: 1},
		ports: []Port{
			{Container: "llm-d-routing-sidecar", Number: 8000, CertFile: certFile, KeyFile: keyFile},
			{Container: "main", Number: 8001, CertFile: certFile, KeyFile: keyFile},
		},
	}, {
		goldenCase: "cpu-pd", deployment: "sim-pd-kserve-prefill",
		model: Model{Names: []string{"Qwen/Qwen2.5-0.5B-Instruct"}, MaxLoRAs: 1},
		ports: []Port{{Container: "main", Number: 8000, CertFile: certFile, KeyFile: keyFile}},
	}}
	for _, c := range cases {
		t.Run(c.deployment, func(t *testing.T) {
			spec, ok := renderedPods(t, c.goldenCase)[c.deployment]
			if !ok {
				t.Fatalf("no Deployment %s in engine/testdata/%s", c.deployment, c.goldenCase)
			}
			model, ports, err := readPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: spec})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.model, model); diff != "" {
				t.Errorf("model (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.ports, ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadPodErrors(t *testing.T) {
	for name, c := range map[string]struct {
		container corev1.Container
		err       string
	}{
		"no model":         {corev1.Container{Name: "main", Args: []string{"--port=8000"}}, "pod ns/p: no container names a model"},
		"bad lora module":  {corev1.Container{Name: "main", Args: []string{"--model=m", "--lora-modules", "nameonly"}}, `container main: --lora-modules "nameonly": want name=path or JSON`},
		"bad max loras":    {corev1.Container{Name: "main", Args: []string{"--model=m", "--max-loras=many"}}, `--max-loras "many"`},
		"lora json noname": {corev1.Container{Name: "main", Args: []string{"--model=m", "--lora-modules", `{"path":"x"}`}}, "no name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := readPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c.container}}})
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v; want one containing %q", err, c.err)
			}
		})
	}
}

func TestShellWords(t *testing.T) {
	got := shellWords("exec vllm serve /m \\\n  --served-model-name 'a b' \"c\" \\\n  ${X} \"$@\"")
	want := []string{"exec", "vllm", "serve", "/m", "--served-model-name", "a b", "c", "${X}", "$@"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shellWords (-want +got):\n%s", diff)
	}
}

// podIP is a loopback address no other test run is likely to use.
func podIP() string {
	return fmt.Sprintf("127.%d.%d.%d", 100+rand.IntN(100), rand.IntN(256), 1+rand.IntN(254))
}

// freePort is a port claimed for the test until it ends (test/hostlock),
// free on every address, a pod's IP's too: a port asked of the kernel and
// closed again could be handed to any process of the machine before the
// fleet listened at it.
func freePort(t *testing.T) int32 {
	t.Helper()
	p, err := hostlock.ClaimPort()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Release(); err != nil {
			t.Error(err)
		}
	})
	return int32(p.Number)
}

func simPod(ip string, port int32, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "svc-kserve-abc12", Labels: map[string]string{"kserve.io/component": "workload"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "main",
			Args:  append([]string{"--served-model-name", "org/model", "publishers/team/models/org/model", "--lora-modules", "sql=org/sql", "--max-loras=2"}, args...),
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
}

func noSecrets(context.Context, string, string) (*corev1.Secret, error) {
	return nil, fmt.Errorf("no Secrets here")
}

// reply is an HTTP response, read.
type reply struct {
	StatusCode int
	Header     http.Header
	Body       string
}

func post(t *testing.T, c *http.Client, url, body string) reply {
	t.Helper()
	return do(t, c, http.MethodPost, url, strings.NewReader(body))
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	r := do(t, c, http.MethodGet, url, nil)
	return r.StatusCode, r.Body
}

func do(t *testing.T, c *http.Client, method, url string, body io.Reader) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{StatusCode: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// TestFleetServesAPod feeds a Running pod and calls every endpoint.
func TestFleetServesAPod(t *testing.T) {
	ip := podIP()
	port := freePort(t)
	fleet := NewFleet(noSecrets, Options{ResponseTime: time.Millisecond})
	t.Cleanup(fleet.Close)
	pod := simPod(ip, port)
	if err := fleet.Apply(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://%s:%d", ip, port)
	c := &http.Client{Timeout: 30 * time.Second}

	if code, _ := get(t, c, base+"/health"); code != http.StatusOK {
		t.Errorf("/health: %d", code)
	}
	code, body := get(t, c, base+"/v1/models")
	var models struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &models); code != http.StatusOK || err != nil {
		t.Fatalf("/v1/models: %d %v\n%s", code, err, body)
	}
	var ids []string
	for _, m := range models.Data {
		id := m.ID
		if m.Parent != nil {
			id += " (adapter of " + *m.Parent + ")"
		}
		ids = append(ids, id)
	}
	if diff := cmp.Diff([]string{"org/model", "publishers/team/models/org/model", "sql (adapter of org/model)"}, ids); diff != "" {
		t.Errorf("/v1/models (-want +got):\n%s", diff)
	}

	for _, model := range []string{"org/model", "publishers/team/models/org/model", "sql"} {
		resp := post(t, c, base+"/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
		body := resp.Body
		var out struct {
			Model   string `json:"model"`
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(body), &out); resp.StatusCode != http.StatusOK || err != nil || len(out.Choices) != 1 {
			t.Fatalf("chat completion of %s: %d %v\n%s", model, resp.StatusCode, err, body)
		}
		if want := "answered by pod team/svc-kserve-abc12"; out.Choices[0].Message.Content != want || out.Model != model {
			t.Errorf("chat completion of %s: model %q content %q; want %q", model, out.Model, out.Choices[0].Message.Content, want)
		}
		if got := resp.Header.Get("X-Model-Server-Pod"); got != pod.Name {
			t.Errorf("X-Model-Server-Pod %q", got)
		}
		if got, want := resp.Header.Get("X-Model-Server-Address"), strings.TrimPrefix(base, "http://"); got != want {
			t.Errorf("X-Model-Server-Address %q, want %q", got, want)
		}
	}
	resp := post(t, c, base+"/v1/completions", `{"model":"org/model","prompt":"hi"}`)
	body = resp.Body
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"answered by pod team/svc-kserve-abc12"`) {
		t.Errorf("completion: %d %s", resp.StatusCode, body)
	}

	// Streamed: chunks, then [DONE].
	resp = post(t, c, base+"/v1/chat/completions", `{"model":"org/model","stream":true,"messages":[]}`)
	body = resp.Body
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("streamed Content-Type %q", ct)
	}
	var text strings.Builder
	var events []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		events = append(events, data)
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if data != "[DONE]" && json.Unmarshal([]byte(data), &chunk) == nil && len(chunk.Choices) == 1 {
			text.WriteString(chunk.Choices[0].Delta.Content)
		}
	}
	if len(events) < 3 || events[len(events)-1] != "[DONE]" || text.String() != "answered by pod team/svc-kserve-abc12" {
		t.Errorf("streamed: text %q, events %q", text.String(), events)
	}

	for _, c2 := range []struct {
		body string
		code int
		msg  string
	}{
		{`{"model":"other","prompt":"x"}`, http.StatusNotFound, "The model `other` does not exist."},
		{`{"prompt":"x"}`, http.StatusBadRequest, "no model in the request"},
		{`not json`, http.StatusBadRequest, "the request body is not JSON"},
	} {
		resp := post(t, c, base+"/v1/completions", c2.body)
		body := resp.Body
		if resp.StatusCode != c2.code || !strings.Contains(body, c2.msg) {
			t.Errorf("%s: %d %s; want %d with %q", c2.body, resp.StatusCode, body, c2.code, c2.msg)
		}
	}
	if st, ok := fleet.Stats(pod.Namespace, pod.Name); !ok || st.Served != 5 {
		t.Errorf("stats %+v, %v; want 5 served", st, ok)
	}

	// A pod that stops running stops being served.
	stopped := pod.DeepCopy()
	stopped.Status.Phase = corev1.PodSucceeded
	if err := fleet.Apply(t.Context(), stopped); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", ip, port), 5*time.Second); err == nil {
		t.Error("the stopped pod's port still accepts connections")
	}
	if got := fleet.Served(); len(got) != 0 {
		t.Errorf("served %q after the pod stopped", got)
	}
}

// metric reads one sample's value and labels from /metrics.
func metric(t *testing.T, c *http.Client, base, name string) (value float64, labels string) {
	t.Helper()
	_, body := get(t, c, base+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, name+"{"); ok {
			labels, v, _ := strings.Cut(rest, "} ")
			if _, err := fmt.Sscan(v, &value); err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			return value, labels
		}
	}
	t.Fatalf("no %s in /metrics:\n%s", name, body)
	return 0, ""
}

// TestMetricsMoveWithLoad holds requests in flight and reads the counts:
// MaxRunning run, the rest wait, the adapters in flight are named; when the
// requests go, the counts fall to 0.
func TestMetricsMoveWithLoad(t *testing.T) {
	ip := podIP()
	port := freePort(t)
	fleet := NewFleet(noSecrets, Options{ResponseTime: time.Hour, MaxRunning: 2})
	t.Cleanup(fleet.Close)
	if err := fleet.Apply(t.Context(), simPod(ip, port)); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://%s:%d", ip, port)
	c := &http.Client{Timeout: 30 * time.Second}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	for i := range 5 {
		model := "org/model"
		if i%2 == 0 {
			model = "sql"
		}
		go func() {
			defer func() { done <- struct{}{} }()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(`{"model":"`+model+`","prompt":"x"}`))
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	testenv.Eventually(t, "2 running and 3 waiting", func() error {
		running, _ := metric(t, c, base, "vllm:num_requests_running")
		waiting, _ := metric(t, c, base, "vllm:num_requests_waiting")
		if running != 2 || waiting != 3 {
			return fmt.Errorf("running %v waiting %v", running, waiting)
		}
		return nil
	})
	if kv, _ := metric(t, c, base, "vllm:kv_cache_usage_perc"); kv != 1 {
		t.Errorf("kv_cache_usage_perc %v with every slot taken; want 1", kv)
	}
	if _, labels := metric(t, c, base, "vllm:lora_requests_info"); !strings.Contains(labels, `max_lora="2"`) || !strings.Contains(labels, "sql") {
		t.Errorf("lora_requests_info labels %s; want max_lora 2 and the adapter sql in flight", labels)
	}
	if _, labels := metric(t, c, base, "vllm:cache_config_info"); !strings.Contains(labels, `block_size="16"`) {
		t.Errorf("cache_config_info labels %s", labels)
	}
	cancel()
	for range 5 {
		<-done
	}
	testenv.Eventually(t, "nothing in flight", func() error {
		running, _ := metric(t, c, base, "vllm:num_requests_running")
		waiting, _ := metric(t, c, base, "vllm:num_requests_waiting")
		_, labels := metric(t, c, base, "vllm:lora_requests_info")
		if running != 0 || waiting != 0 || !strings.Contains(labels, `running_lora_adapters=""`) {
			return fmt.Errorf("running %v waiting %v lora %s", running, waiting, labels)
		}
		return nil
	})
}

// TestFleetServesTLS serves a pod whose container reads its certificate
// from a mounted Secret, and moves when the pod's IP changes.
func TestFleetServesTLS(t *testing.T) {
	now := time.Now()
	ca, err := certs.NewCA("test", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ip := podIP()
	leaf, err := certs.Issue(ca, []string{"svc-kserve-workload-svc.team.svc", ip}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]*corev1.Secret{"team/svc-kserve-self-signed-certs": {Data: map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM}}}
	getSecret := func(_ context.Context, ns, name string) (*corev1.Secret, error) {
		if s, ok := secrets[ns+"/"+name]; ok {
			return s, nil
		}
		return nil, fmt.Errorf("Secret %s/%s not found", ns, name)
	}
	port := freePort(t)
	pod := simPod(ip, port, "--ssl-certfile=/var/run/kserve/tls/tls.crt", "--ssl-keyfile=/var/run/kserve/tls/tls.key")
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "tls-certs", MountPath: "/var/run/kserve/tls", ReadOnly: true}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "tls-certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "svc-kserve-self-signed-certs"}}}}
	fleet := NewFleet(getSecret, Options{ResponseTime: time.Millisecond})
	t.Cleanup(fleet.Close)

	// Without its Secret the pod is not served, and the error says why.
	noSecret := pod.DeepCopy()
	noSecret.Spec.Volumes[0].Secret.SecretName = "missing"
	if err := fleet.Apply(t.Context(), noSecret); err == nil || !strings.Contains(err.Error(), "read Secret team/missing") {
		t.Errorf("a pod whose Secret is missing: error %v", err)
	}

	if err := fleet.Apply(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	if code, body := get(t, c, fmt.Sprintf("https://%s:%d/v1/models", ip, port)); code != http.StatusOK || !strings.Contains(body, "org/model") {
		t.Errorf("TLS /v1/models: %d %s", code, body)
	}

	// The pod moves to another IP: the old address is closed, the new one serves.
	moved := pod.DeepCopy()
	moved.Status.PodIP = podIP()
	if err := fleet.Apply(t.Context(), moved); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", ip, port), 5*time.Second); err == nil {
		t.Error("the old IP still accepts connections")
	}
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", moved.Status.PodIP, port), 5*time.Second)
	if err != nil {
		t.Fatalf("the new IP: %v", err)
	}
	conn.Close()
}

// TestRunFollowsPods runs the informer on a fake clientset: a pod that
// starts running is served, one that is not selected is not, and a deleted
// one stops being served.
func TestRunFollowsPods(t *testing.T) {
	cs := fake.NewClientset()
	fleet := runFleet(t, cs, Options{ResponseTime: time.Millisecond})
	ip := podIP()
	pod := simPod(ip, freePort(t))
	pending := pod.DeepCopy()
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending}
	pods := cs.CoreV1().Pods(pod.Namespace)
	if _, err := pods.Create(t.Context(), pending, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := simPod(podIP(), 8000)
	other.Name, other.Labels = "epp", map[string]string{"app.kubernetes.io/component": "llminferenceservice-router-scheduler"}
	if _, err := pods.Create(t.Context(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the running pod served", func() error {
		if got := fleet.Served(); !slices.Equal(got, []string{"team/svc-kserve-abc12"}) {
			return fmt.Errorf("served %q", got)
		}
		return nil
	})
	if err := pods.Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the deleted pod no longer served", func() error {
		if got := fleet.Served(); len(got) != 0 {
			return fmt.Errorf("served %q", got)
		}
		return nil
	})
}

// TestRunServesItsNamespace: a fleet given a namespace serves the Running
// pods of that namespace only, so that tests sharing a cluster each serve
// their own.
func TestRunServesItsNamespace(t *testing.T) {
	cs := fake.NewClientset()
	fleet := runFleet(t, cs, Options{ResponseTime: time.Millisecond, Namespace: "team"})
	ip, otherIP := podIP(), podIP()
	mine, theirs := simPod(ip, freePort(t)), simPod(otherIP, freePort(t))
	theirs.Namespace = "elsewhere"
	for _, p := range []*corev1.Pod{theirs, mine} {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the namespace's pod served", func() error {
		if got := fleet.Served(); !slices.Equal(got, []string{"team/svc-kserve-abc12"}) {
			return fmt.Errorf("served %q", got)
		}
		return nil
	})
}

// runFleet runs a fleet on the fake clientset cs until the test ends, and
// returns once its informer watches pods.
func runFleet(t *testing.T, cs *fake.Clientset, opts Options) *Fleet {
	t.Helper()
	// The fake clientset's watch does not replay what changed between the
	// informer's list and its watch: create the pods once the watch is on.
	watching := make(chan struct{})
	var once sync.Once
	cs.PrependWatchReactor("pods", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := cs.Tracker().Watch(action.GetResource(), action.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	fleet := NewFleet(ClientSecrets(cs), opts)
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- fleet.Run(ctx, cs) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-watching:
	case <-time.After(testenv.Timeout):
		t.Fatal("the informer never watched pods")
	}
	return fleet
}
