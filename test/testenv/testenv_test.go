package testenv_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func TestRecorder(t *testing.T) {
	read := &testenv.Buffer{} // the bodies the server read
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(read, req.Body)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(server.Close)
	r := &testenv.Recorder{}
	c := &http.Client{Transport: r.Wrap(http.DefaultTransport)}
	send := func(method, path string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, server.URL+path, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	send(http.MethodGet, "/a")
	send(http.MethodPatch, "/a")
	if got := r.Take(); !slices.Equal(got, []string{"PATCH /a"}) {
		t.Errorf("writes %v, want the PATCH only", got)
	}
	r.SetConflict(func(method, path string) bool { return method == http.MethodPut && path == "/b" })
	if code := send(http.MethodPut, "/b"); code != http.StatusConflict {
		t.Errorf("an injected conflict answered %d", code)
	}
	if code := send(http.MethodDelete, "/b"); code != http.StatusOK {
		t.Errorf("a write the conflict does not match answered %d", code)
	}
	if got := r.Take(); !slices.Equal(got, []string{"PUT /b", "DELETE /b"}) {
		t.Errorf("writes since the last Take %v", got)
	}
	failed := r.FailFirst(1, http.MethodPost, "/c")
	send(http.MethodPost, "/c")
	if code := send(http.MethodPost, "/c"); code != http.StatusOK || failed() != 1 {
		t.Errorf("FailFirst(1): the second write answered %d, %d failed", code, failed())
	}
	r.SetConflict(nil)
	r.Take()
	if r.Count() != 5 || !slices.Equal(r.Since(2), []string{"DELETE /b", "POST /c", "POST /c"}) {
		t.Errorf("count %d, since 2 %v", r.Count(), r.Since(2))
	}
	// A write's body reaches the server, and the recorder keeps it with
	// the answer's code.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPatch, server.URL+"/d", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Do(req); err != nil {
		t.Fatal(err)
	} else {
		_ = resp.Body.Close()
	}
	if got := r.Writes(5); len(got) != 1 || got[0] != (testenv.Write{Method: http.MethodPatch, Path: "/d", Body: `{"a":1}`, Code: http.StatusOK}) || got[0].String() != "PATCH /d" {
		t.Errorf("writes with bodies %+v", got)
	}
	if got, want := read.String(), `{"a":1}`; got != want {
		t.Errorf("the server read %q, want %q", got, want)
	}
	if w := r.Writes(0); w[1].Code != http.StatusConflict || w[2].Code != http.StatusOK {
		t.Errorf("codes of an injected conflict and a sent write: %d, %d", w[1].Code, w[2].Code)
	}
	send(http.MethodGet, "/a?watch=true")
	if v := r.Verbs(); v["get"] != 1 || v["watch"] != 1 || v["update"] != 1 || v["patch"] != 2 || v["delete"] != 1 || v["create"] != 2 || len(v) != 6 {
		t.Errorf("verbs %v", v)
	}
}

func TestWithin(t *testing.T) {
	n := 0
	testenv.Within(t, testenv.Timeout, "the third check", func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
}

func TestNewNamespace(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	name := testenv.NewNamespace(t, c, "p")
	if !strings.HasPrefix(name, "p-testnewnamespace-") {
		t.Errorf("name %q", name)
	}
	if other := testenv.NewNamespace(t, c, "p"); other == name {
		t.Errorf("two namespaces named %q", name)
	}
	testenv.EnsureNamespace(t, c, name)
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &corev1.Namespace{}); err != nil {
		t.Fatal(err)
	}
}

func TestKubeconfig(t *testing.T) {
	in := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "token"}
	cfg, err := clientcmd.BuildConfigFromFlags("", testenv.Kubeconfig(t, in, "team"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != in.Host || cfg.BearerToken != in.BearerToken {
		t.Errorf("read back %s %q", cfg.Host, cfg.BearerToken)
	}
}

// TestBuildCommandCopiesBinDir: with $ODH_SERVING_BIN set (make test sets
// it to bin/), BuildCommand copies the binary from there, executable,
// instead of linking its own; a binary missing there is an error that
// names the variable.
func TestBuildCommandCopiesBinDir(t *testing.T) {
	bin := t.TempDir()
	want := []byte("#!/bin/sh\necho built by make build\n")
	if err := os.WriteFile(filepath.Join(bin, "odh-serving"), want, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(testenv.BinDirEnv, bin)
	to := filepath.Join(t.TempDir(), "sub", "odh-serving")
	if err := testenv.BuildCommand(t.Context(), "odh-serving", to); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(to)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("copied %q, want %q", got, want)
	}
	if fi, err := os.Stat(to); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("the copy is not executable: %v, %v", fi.Mode(), err)
	}
	err = testenv.BuildCommand(t.Context(), "odh-serving-render", filepath.Join(t.TempDir(), "odh-serving-render"))
	if err == nil || !strings.Contains(err.Error(), "$"+testenv.BinDirEnv) {
		t.Errorf("odh-serving-render missing from $%s: error %v, want one that names the variable", testenv.BinDirEnv, err)
	}
}

// FreePort's port is claimed (hostlock.ClaimPort) until the test ends:
// from the range the kernel never hands out, and refused to any other
// claimant meanwhile.
func TestFreePort(t *testing.T) {
	n := testenv.FreePort(t)
	if n < hostlock.FirstPort || n > hostlock.LastPort {
		t.Fatalf("FreePort %d, want a claimed port, from %d to %d", n, hostlock.FirstPort, hostlock.LastPort)
	}
	if _, err := hostlock.Try(hostlock.Dir(), hostlock.PortName(n)); !errors.Is(err, hostlock.ErrHeld) {
		t.Fatalf("another claim of FreePort's port %d: %v, want ErrHeld", n, err)
	}
	if m := testenv.FreePort(t); m == n {
		t.Fatalf("FreePort gave port %d twice", n)
	}
}
