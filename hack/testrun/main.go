package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// defaultTestFlags go to every test binary before the caller's -test.*
// flags, which override them (a flag's last value wins).
var defaultTestFlags = []string{"-test.paniconexit0", "-test.count=1", "-test.shuffle=on", "-test.timeout=10m"}

type config struct {
	moduleDir  string // where go list and go test -c run; "" is the current directory
	binDir     string // absolute
	jobs       int
	buildFlags []string
	patterns   []string
	testFlags  []string
	linkOnly   bool
}

// pkg is a package as go list reports it, and where its test binary lives.
type pkg struct {
	ImportPath   string
	Dir          string
	Match        []string // the patterns that named it
	TestGoFiles  []string
	XTestGoFiles []string

	bin string // relative to the bin directory: "0/controller.test"; "" without tests
}

func (p *pkg) hasTests() bool { return len(p.TestGoFiles)+len(p.XTestGoFiles) > 0 }

func main() { os.Exit(mainStatus()) }

func mainStatus() int {
	cfg, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		return 2
	}
	// The first Ctrl-C ends the run: no more packages start, and the running
	// ones get it too. A second one stops testrun at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Println("testrun:", err)
		return 1
	}
	return 0
}

func parseArgs(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("testrun", flag.ContinueOnError)
	fs.IntVar(&cfg.jobs, "p", runtime.GOMAXPROCS(0), "how many test binaries run at once (go test's -p)")
	fs.StringVar(&cfg.binDir, "o", filepath.Join("bin", "test"), "the directory that keeps the test binaries")
	build := fs.String("build", "", "go test -c's flags, space-separated (-ldflags=-w)")
	fs.BoolVar(&cfg.linkOnly, "c", false, "only link the test binaries; run none")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	for _, a := range fs.Args() {
		switch {
		case strings.HasPrefix(a, "-test."):
			cfg.testFlags = append(cfg.testFlags, a)
		case strings.HasPrefix(a, "-"):
			return cfg, fmt.Errorf("%s: after the packages come only flags for the test binaries, spelt -test.NAME (-test.run=X, -test.v)", a)
		default:
			cfg.patterns = append(cfg.patterns, a)
		}
	}
	if len(cfg.patterns) == 0 {
		return cfg, errors.New("no packages given (./... for all)")
	}
	if cfg.jobs < 1 {
		return cfg, fmt.Errorf("-p %d: at least one test binary must run at a time", cfg.jobs)
	}
	cfg.buildFlags = strings.Fields(*build)
	var err error
	cfg.binDir, err = filepath.Abs(cfg.binDir)
	return cfg, err
}

// run builds and runs the tests of the packages cfg names, writing what go
// test would to out; the error names the packages that failed.
func run(ctx context.Context, cfg config, out io.Writer) error {
	all, err := list(ctx, cfg)
	if err != nil {
		return err
	}
	placeBinaries(all)
	if err := prune(cfg.binDir, all); err != nil {
		return err
	}
	var tested []*pkg
	for _, p := range all {
		named := slices.ContainsFunc(p.Match, func(m string) bool { return slices.Contains(cfg.patterns, m) })
		switch {
		case named && p.hasTests():
			tested = append(tested, p)
		case named:
			fmt.Fprintf(out, "?   \t%s\t[no test files]\n", p.ImportPath)
		}
	}

	start := time.Now()
	unbuilt, linked, err := build(ctx, cfg, tested, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "testrun: test binaries in %s: %d linked, %d up to date (%.1fs)\n",
		cfg.binDir, linked, len(tested)-len(unbuilt)-linked, time.Since(start).Seconds())
	var failed []string
	for _, p := range unbuilt {
		fmt.Fprintf(out, "FAIL\t%s [build failed]\n", p.ImportPath)
		failed = append(failed, p.ImportPath+" [build failed]")
	}

	env, err := testEnv(ctx, cfg)
	if err != nil {
		return err
	}
	runnable := slices.DeleteFunc(slices.Clone(tested), func(p *pkg) bool { return cfg.linkOnly || slices.Contains(unbuilt, p) })
	failedRuns, notRun := runAll(ctx, cfg, env, runnable, out)
	for _, p := range failedRuns {
		failed = append(failed, p.ImportPath)
	}
	if notRun > 0 {
		failed = append(failed, fmt.Sprintf("interrupted: %d packages did not run", notRun))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d test packages failed:\n\t%s", len(failedRuns)+len(unbuilt), len(tested), strings.Join(failed, "\n\t"))
	}
	return nil
}

// list lists the packages the patterns name, in their order, then the rest
// of ./..., whose test binaries keep their places in the bin directory.
func list(ctx context.Context, cfg config) ([]*pkg, error) {
	args := slices.Concat([]string{"list", "-json=ImportPath,Dir,Match,TestGoFiles,XTestGoFiles"}, cfg.patterns, []string{"./..."})
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Stderr = cfg.moduleDir, os.Stderr
	data, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", strings.Join(cfg.patterns, " "), err)
	}
	var pkgs []*pkg
	for dec := json.NewDecoder(bytes.NewReader(data)); ; {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading go list's output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// placeBinaries sets each package's test binary path. go test -c names a
// binary after the import path's last element, and one go test -c -o DIR/
// refuses two packages of one name: so the k-th package of a name, in
// import-path order, goes to group directory k.
func placeBinaries(pkgs []*pkg) {
	seen := map[string]int{}
	for _, p := range slices.SortedFunc(slices.Values(pkgs), func(a, b *pkg) int { return strings.Compare(a.ImportPath, b.ImportPath) }) {
		if p.hasTests() {
			name := binaryName(p.ImportPath)
			p.bin = filepath.Join(strconv.Itoa(seen[name]), name)
			seen[name]++
		}
	}
}

// binaryName is go test -c's name for a package's test binary: the import
// path's last element, or the one before it for a major version (m/x/v2).
func binaryName(importPath string) string {
	dir, elem := path.Split(importPath)
	if dir != "" && isMajorVersion(elem) {
		elem = path.Base(dir)
	}
	return elem + ".test"
}

// isMajorVersion reports whether s is v2, v3, ... (not v0, v1 or v01).
func isMajorVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] == '0' || s == "v1" {
		return false
	}
	return strings.Trim(s[1:], "0123456789") == ""
}

// prune removes the test binaries of packages that are gone. It touches
// only DIR/<group>/*.test, in case DIR holds other files.
func prune(binDir string, pkgs []*pkg) error {
	want := map[string]bool{}
	for _, p := range pkgs {
		if p.bin != "" {
			want[filepath.Join(binDir, p.bin)] = true
		}
	}
	found, err := filepath.Glob(filepath.Join(binDir, "[0-9]*", "*.test"))
	if err != nil {
		return err
	}
	for _, f := range found {
		if !want[f] {
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("removing the test binary of a package that is gone: %w", err)
			}
		}
	}
	return nil
}

// build links the packages' test binaries with one go test -c per group
// directory. It returns the packages whose binary go neither wrote nor
// touched (they did not build; go printed why) and how many it linked.
func build(ctx context.Context, cfg config, pkgs []*pkg, out io.Writer) (unbuilt []*pkg, linked int, err error) {
	if err := os.MkdirAll(cfg.binDir, 0o755); err != nil {
		return nil, 0, err
	}
	groups := map[string][]string{}
	before := map[*pkg]os.FileInfo{}
	for _, p := range pkgs {
		g := filepath.Dir(p.bin)
		groups[g] = append(groups[g], p.ImportPath)
		if fi, err := os.Stat(filepath.Join(cfg.binDir, p.bin)); err == nil {
			before[p] = fi
		}
	}
	since, err := fileSystemNow(cfg.binDir)
	if err != nil {
		return nil, 0, err
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		args := slices.Concat([]string{"test", "-c", "-o", filepath.Join(cfg.binDir, g) + string(filepath.Separator)}, cfg.buildFlags, groups[g])
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = cfg.moduleDir, out, out
		var exitErr *exec.ExitError
		if err := cmd.Run(); err != nil && !errors.As(err, &exitErr) {
			return nil, 0, fmt.Errorf("go test -c: %w", err)
		}
	}
	for _, p := range pkgs {
		fi, err := os.Stat(filepath.Join(cfg.binDir, p.bin))
		switch {
		case err != nil || fi.ModTime().Before(since):
			unbuilt = append(unbuilt, p)
		case before[p] == nil || !os.SameFile(before[p], fi): // a link writes a new file
			linked++
		}
	}
	return unbuilt, linked, nil
}

// fileSystemNow is the time the file system stamps on a file written now,
// which is coarser than time.Now.
func fileSystemNow(dir string) (time.Time, error) {
	f, err := os.CreateTemp(dir, ".now-*")
	if err != nil {
		return time.Time{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// testEnv is the test binaries' environment: this one, with GOROOT/bin
// first in PATH, as go test sets it (tests run go).
func testEnv(ctx context.Context, cfg config) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOROOT")
	cmd.Dir = cfg.moduleDir
	goroot, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOROOT: %w", err)
	}
	bin := filepath.Join(strings.TrimSpace(string(goroot)), "bin")
	return append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH")), nil
}

// runAll runs the packages' test binaries, cfg.jobs at a time, starting
// them in the order given, and writes each one's report to out as it ends.
// It returns the packages that failed, and how many it did not start
// because ctx ended (an interrupt).
func runAll(ctx context.Context, cfg config, env []string, pkgs []*pkg, out io.Writer) (failed []*pkg, notRun int) {
	args := slices.Concat(defaultTestFlags, cfg.testFlags)
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, cfg.jobs)
	for i, p := range pkgs {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			notRun = len(pkgs) - i
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			report, ok := runPackage(ctx, p, filepath.Join(cfg.binDir, p.bin), args, env)
			mu.Lock()
			defer mu.Unlock()
			_, _ = out.Write(report)
			if !ok {
				failed = append(failed, p)
			}
		})
	}
	wg.Wait()
	return failed, notRun
}

// runPackage runs a test binary as go test runs it and returns what go test
// prints for it, and whether it passed.
func runPackage(ctx context.Context, p *pkg, bin string, args, env []string) (report []byte, ok bool) {
	var r bytes.Buffer
	output, err := os.CreateTemp("", "testrun-*.out")
	if err != nil {
		fmt.Fprintf(&r, "%v\nFAIL\t%s\n", err, p.ImportPath)
		return r.Bytes(), false
	}
	_ = os.Remove(output.Name()) // open but unlinked: nothing is left behind, even after a Ctrl-C
	defer output.Close()

	kill := killAfter(args)
	runCtx, cancel := context.WithCancel(ctx)
	if kill > 0 {
		runCtx, cancel = context.WithTimeout(ctx, kill)
	}
	defer cancel()
	cmd := exec.CommandContext(runCtx, bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = p.Dir, output, output
	cmd.Env = slices.Concat(env, []string{"PWD=" + p.Dir})
	killed := false
	cmd.Cancel = func() error {
		if ctx.Err() != nil { // interrupted: pass it on
			return cmd.Process.Signal(os.Interrupt)
		}
		killed = true
		return cmd.Process.Signal(syscall.SIGQUIT) // the binary prints its goroutines and exits
	}
	cmd.WaitDelay = 5 * time.Second // then SIGKILL
	start := time.Now()
	runErr := cmd.Run()
	elapsed := time.Since(start).Seconds()
	text, err := readBack(output)
	if err != nil {
		text = fmt.Appendf(text, "\nreading the test's output back: %v\n", err)
	}

	if runErr == nil {
		if verbose(args) {
			r.Write(text)
			endLine(&r)
		}
		norun := ""
		if bytes.Contains(text, []byte("testing: warning: no tests to run")) {
			norun = " [no tests to run]"
		}
		fmt.Fprintf(&r, "ok  \t%s\t%.3fs%s\n", p.ImportPath, elapsed, norun)
		return r.Bytes(), true
	}
	r.Write(text)
	endLine(&r)
	if killed {
		fmt.Fprintf(&r, "*** Test killed with quit: ran too long (%v).\n", kill)
	}
	var exitErr *exec.ExitError
	if !errors.As(runErr, &exitErr) || !exitErr.Exited() || len(text) == 0 {
		fmt.Fprintln(&r, runErr) // a signal, or no output: say why it failed
	}
	fmt.Fprintf(&r, "FAIL\t%s\t%.3fs\n", p.ImportPath, elapsed)
	return r.Bytes(), false
}

// readBack reads f from its start.
func readBack(f *os.File) ([]byte, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// endLine ends b with a newline unless it is empty or ends with one.
func endLine(b *bytes.Buffer) {
	if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
		b.WriteByte('\n')
	}
}

// killAfter is how long a test binary may run before it gets SIGQUIT: a
// minute past its -test.timeout (the last one given), as go test allows;
// 0, never, for -test.timeout=0.
func killAfter(args []string) time.Duration {
	var timeout time.Duration
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "-test.timeout="); ok {
			timeout, _ = time.ParseDuration(v) // a bad value: the binary itself says so
		}
	}
	if timeout <= 0 {
		return 0
	}
	return timeout + time.Minute
}

// verbose reports whether the last -test.v asks for every test's output,
// which go test then prints for passing packages too.
func verbose(args []string) bool {
	v := false
	for _, a := range args {
		switch a {
		case "-test.v", "-test.v=true", "-test.v=test2json":
			v = true
		case "-test.v=false":
			v = false
		}
	}
	return v
}
