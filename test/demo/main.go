package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/opendatahub-io/odh-serving/test/localcluster"
)

const usage = `usage: go run ./test/demo [command]

commands:
  (none), run            the demo; DEMO_KEEP=1 keeps the environment running
  down                   stop what a DEMO_KEEP=1 run left running
  devcluster up|down     only the local cluster (kube-apiserver + etcd), kubeconfig in bin/demo/
  dataplane --kubeconfig FILE --epp BINARY --dir DIR
                         run the data plane (test gateway, model servers, endpoint pickers)
                         in the foreground
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "bin", "demo")
	cmd, rest := "run", args
	if len(args) > 0 {
		cmd, rest = args[0], args[1:]
	}
	switch cmd {
	case "run":
		_, err := runDemo(ctx, config{Root: root, Dir: dir, Out: out, Keep: os.Getenv("DEMO_KEEP") == "1", Detached: true})
		return err
	case "down":
		return down(dir, out)
	case "devcluster":
		return devcluster(ctx, root, dir, rest, out)
	case "dataplane":
		return dataplane(ctx, rest, out)
	case "-h", "--help", "help":
		fmt.Fprint(out, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

// devcluster runs the local cluster on its own: up (detached), down, or
// serve (the supervisor process up starts).
func devcluster(ctx context.Context, root, dir string, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("devcluster: want up, down or serve")
	}
	switch args[0] {
	case "up":
		cluster := []string{"etcd", "kube-apiserver"}
		assets, err := testAssets(ctx, root, os.Stderr, cluster, cluster)
		if err != nil {
			return err
		}
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("devcluster: find this program: %w", err)
		}
		st, err := localcluster.Up(ctx, localcluster.Options{Dir: dir, AssetsDir: assets},
			[]string{self, "devcluster", "serve", "--dir", dir, "--assets", assets})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "local cluster up: %s (supervisor pid %d)\n  export KUBECONFIG=%s\n  export PATH=%s:$PATH   # kubectl, helm\nstop it: go run ./test/demo devcluster down\n",
			st.APIServerURL, st.SupervisorPID, st.Kubeconfig, assets)
		return nil
	case "down":
		if err := localcluster.Down(dir); err != nil {
			return err
		}
		fmt.Fprintln(out, "local cluster down")
		return nil
	case "serve":
		fs := flag.NewFlagSet("devcluster serve", flag.ContinueOnError)
		d := fs.String("dir", dir, "the cluster's folder")
		assets := fs.String("assets", "", "folder of etcd and kube-apiserver")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return localcluster.Serve(ctx, localcluster.Options{Dir: *d, AssetsDir: *assets})
	}
	return fmt.Errorf("devcluster: unknown command %q (want up, down or serve)", args[0])
}

// repoRoot is the folder of go.mod above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the repository: no go.mod above the working directory; run the demo from the odh-serving checkout")
		}
		dir = parent
	}
}

// testAssets builds (once), or reuses, the binaries the demo runs and
// returns their folder: `hack/setup-test-assets.sh ARGS...` (demo: etcd,
// kube-apiserver and helm), whose progress goes to progress. It checks that
// the folder has bins.
func testAssets(ctx context.Context, root string, progress io.Writer, args, bins []string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "hack", "setup-test-assets.sh")}, args...)...)
	cmd.Dir = root
	cmd.Stderr = progress
	outBytes, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/setup-test-assets.sh %s: %w", strings.Join(args, " "), err)
	}
	dir := strings.TrimSpace(string(outBytes))
	for _, bin := range bins {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("hack/setup-test-assets.sh printed %q, which lacks %s: %w", dir, bin, err)
		}
	}
	return dir, nil
}

// andList joins names as "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// indented writes to w with prefix at the start of every line: the
// asset script's progress under the demo's step header.
type indented struct {
	w      io.Writer
	prefix string
	bol    bool // at the beginning of a line
}

func (i *indented) Write(p []byte) (int, error) {
	var buf []byte
	for _, c := range p {
		if i.bol {
			buf = append(buf, i.prefix...)
		}
		buf = append(buf, c)
		i.bol = c == '\n'
	}
	if _, err := i.w.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}
