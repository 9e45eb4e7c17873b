package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/opendatahub-io/odh-serving/test/localcluster/detach"
)

// State is what the state file records about a running cluster.
type State struct {
	// SupervisorPID runs Serve; stopping it stops the cluster.
	SupervisorPID int `json:"supervisorPid"`
	// EtcdPID and APIServerPID are the control plane's processes (0 where
	// they could not be found: only Linux has /proc). Down signals them
	// directly when the supervisor died without stopping them.
	EtcdPID      int `json:"etcdPid,omitempty"`
	APIServerPID int `json:"apiServerPid,omitempty"`
	// APIServerURL is where the API server listens (loopback).
	APIServerURL string `json:"apiServerUrl"`
	// EtcdURL is where etcd listens for clients (loopback).
	EtcdURL string `json:"etcdUrl"`
	// Kubeconfig is the kubeconfig's path.
	Kubeconfig string `json:"kubeconfig"`
	// Dir is the cluster's folder; its path appears in the command line of
	// all three processes, which is how Down recognises them.
	Dir     string    `json:"dir"`
	Started time.Time `json:"started"`
}

// ReadState reads the state file in dir; it returns an error satisfying
// errors.Is(err, fs.ErrNotExist) when no cluster was started there.
func ReadState(dir string) (*State, error) {
	path := filepath.Join(dir, StateFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("local cluster state: %w", err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("local cluster state %s: %w", path, err)
	}
	return &st, nil
}

// Running reports whether the supervisor recorded in the state is alive.
func (s *State) Running() bool { return detach.Alive(s.SupervisorPID, s.Dir) }

func writeState(dir string, st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("local cluster state: %w", err)
	}
	tmp := filepath.Join(dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("local cluster state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, StateFile)); err != nil {
		return fmt.Errorf("local cluster state: %w", err)
	}
	return nil
}

// Serve starts the cluster in this process, records it in the state file,
// and stops it when ctx is done. It is the body of the supervisor process
// Up starts.
func Serve(ctx context.Context, opts Options) error {
	c, err := Start(opts)
	if err != nil {
		return err
	}
	st := &State{
		SupervisorPID: os.Getpid(),
		APIServerURL:  c.APIServerURL(),
		EtcdURL:       c.EtcdURL(),
		Kubeconfig:    c.Kubeconfig,
		Dir:           c.Dir,
		Started:       time.Now().UTC().Truncate(time.Second),
	}
	children := detach.Children(os.Getpid())
	st.EtcdPID, st.APIServerPID = children["etcd"], children["kube-apiserver"]
	if err := writeState(c.Dir, st); err != nil {
		return errors.Join(err, c.Stop())
	}
	fmt.Printf("local cluster up: %s, kubeconfig %s\n", st.APIServerURL, st.Kubeconfig)
	<-ctx.Done()
	fmt.Println("local cluster: stopping")
	return errors.Join(c.Stop(), removeState(c.Dir))
}

func removeState(dir string) error {
	if err := os.Remove(filepath.Join(dir, StateFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("local cluster state: %w", err)
	}
	return nil
}

// Up starts serve (a command whose process calls Serve with the same
// folder) detached from this process, and returns once the state file says
// the API server is up. The folder's absolute path must appear in serve's
// arguments: Down recognises the supervisor by it. A cluster already running
// in the folder is an error.
func Up(ctx context.Context, opts Options, serve []string) (*State, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(serve, func(arg string) bool { return strings.Contains(arg, opts.Dir) }) {
		return nil, fmt.Errorf("local cluster: the supervisor command %q must name the folder %s", serve, opts.Dir)
	}
	if st, err := ReadState(opts.Dir); err == nil && st.Running() {
		return nil, fmt.Errorf("a local cluster already runs in %s (supervisor pid %d, %s): stop it first", opts.Dir, st.SupervisorPID, st.APIServerURL)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("local cluster folder: %w", err)
	}
	if err := removeState(opts.Dir); err != nil {
		return nil, err
	}
	logPath := filepath.Join(opts.Dir, SupervisorLog)
	proc, exited, err := detach.Start(serve, []string{"KUBEBUILDER_ASSETS=" + opts.AssetsDir}, logPath)
	if err != nil {
		return nil, fmt.Errorf("local cluster: %w", err)
	}
	deadline := time.NewTimer(opts.StartTimeout + 30*time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("local cluster supervisor exited before the API server was up (%w); its log %s ends with:\n%s", err, logPath, tail(logPath))
		case <-deadline.C:
			return nil, errors.Join(fmt.Errorf("local cluster: the API server was not up after %s; log %s", opts.StartTimeout+30*time.Second, logPath),
				detach.Stop(proc.Pid, opts.Dir, 30*time.Second))
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), detach.Stop(proc.Pid, opts.Dir, 30*time.Second))
		case <-tick.C:
			st, err := ReadState(opts.Dir)
			if err == nil && st.SupervisorPID == proc.Pid {
				return st, nil
			}
		}
	}
}

// Down stops the cluster recorded in dir's state file: it signals the
// supervisor, which stops the API server and etcd, and signals those two
// itself if the supervisor is gone. No state file is no error.
func Down(dir string) error {
	st, err := ReadState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	errs := []error{detach.Stop(st.SupervisorPID, st.Dir, 45*time.Second)}
	// After a clean stop these are gone; after a crash of the supervisor
	// they are orphans.
	for _, pid := range []int{st.APIServerPID, st.EtcdPID} {
		errs = append(errs, detach.Stop(pid, st.Dir, 30*time.Second))
	}
	errs = append(errs, removeState(st.Dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("local cluster down: %w", err)
	}
	return nil
}

// tail returns the last lines of a log for an error message.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
