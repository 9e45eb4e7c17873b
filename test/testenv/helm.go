package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Helm runs a helm binary with folders of its own: HELM_CACHE_HOME,
// HELM_CONFIG_HOME and HELM_DATA_HOME (where plugins go) under one
// directory, none of the caller's HELM_* variables, and KUBECONFIG only
// when it is given one.
type Helm struct {
	// Path is the binary.
	Path string
	// Env is the environment it runs with.
	Env []string
}

// NewHelm finds name (helm, or helm4 for Helm 4) on PATH and gives it
// folders under home. kubeconfig, when not empty, is the cluster it
// reaches; the file need not exist yet.
func NewHelm(name, home, kubeconfig string) (*Helm, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%s is not on PATH; run the tests with `make test`, or with PATH=\"$(bash hack/setup-test-assets.sh):$PATH\": %w", name, err)
	}
	h := &Helm{Path: path}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HELM_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			h.Env = append(h.Env, kv)
		}
	}
	h.Env = append(h.Env,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	if kubeconfig != "" {
		h.Env = append(h.Env, "KUBECONFIG="+kubeconfig)
	}
	return h, nil
}

// HelmFor is NewHelm for one test, with its folders in a temporary folder
// of the test's.
func HelmFor(tb testing.TB, name, kubeconfig string) *Helm {
	tb.Helper()
	h, err := NewHelm(name, tb.TempDir(), kubeconfig)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// Run runs helm with args and returns its stdout. The error carries its
// stderr.
func (h *Helm) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.Path, args...)
	cmd.Env = h.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(h.Path), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// Must is Run with the test's context that fails the test on an error.
func (h *Helm) Must(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := h.Run(tb.Context(), args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// BinDirEnv names the folder whose odh-serving and odh-serving-render
// BuildCommand copies instead of building them: `make test` sets it to
// bin/, which `make build` fills, so the test packages that run a binary
// share its one link (8 s of CPU each) rather than link it again each.
const BinDirEnv = "ODH_SERVING_BIN"

// BuildCommand builds cmd/<name> (odh-serving, odh-serving-render) to
// path, for the tests in which helm, a plugin or a shell runs it; with
// $ODH_SERVING_BIN set, it copies $ODH_SERVING_BIN/<name> there instead.
func BuildCommand(ctx context.Context, name, path string) error {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		if err := copyExecutable(filepath.Join(dir, name), path); err != nil {
			return fmt.Errorf("%s from $%s (`make build` makes it): %w", name, BinDirEnv, err)
		}
		return nil
	}
	out, err := exec.CommandContext(ctx, "go", "build", "-o", path, "github.com/opendatahub-io/odh-serving/cmd/"+name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("build %s: %w\n%s", name, err, out)
	}
	return nil
}

// copyExecutable copies the file from to a new executable file to,
// making to's folder if needed.
func copyExecutable(from, to string) (err error) {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dst.Close()) }()
	if _, err := io.Copy(dst, src); err != nil {
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	return nil
}
