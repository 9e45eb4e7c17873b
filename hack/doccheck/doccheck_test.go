package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const repo = "../.."

// TestRepositoryHasNoDrift: the repository as committed passes.
func TestRepositoryHasNoDrift(t *testing.T) {
	if err := check(repo); err != nil {
		t.Fatal(err)
	}
}

// copyDemo copies what the step check reads into a new root and returns it.
func copyDemo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files, err := filepath.Glob(filepath.Join(repo, demoDir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, filepath.Join(repo, demoDoc), filepath.Join(repo, readme)) {
		rel, err := filepath.Rel(repo, f)
		if err != nil {
			t.Fatal(err)
		}
		write(t, root, rel, string(read(t, f)))
	}
	return root
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	path := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// plant replaces old with new in root's file rel; old must be there.
func plant(t *testing.T, root, rel, old, repl string) {
	t.Helper()
	data := string(read(t, filepath.Join(root, rel)))
	if !strings.Contains(data, old) {
		t.Fatalf("%s has no %q to plant a drift in", rel, old)
	}
	write(t, root, rel, strings.Replace(data, old, repl, 1))
}

// TestDemoStepDrift plants each kind of step drift in a copy of the demo
// and its docs, and wants the error that names it.
func TestDemoStepDrift(t *testing.T) {
	cases := map[string]struct {
		rel, old, repl, want string
	}{
		"a step the docs do not list": {
			demoDir + "/demo.go", "d.garbageCollect, d.finish,", "d.garbageCollect, d.garbageCollect, d.finish,",
			`"## The steps" lists 17 steps; test/demo runs 18`,
		},
		"the step constant": {
			demoDir + "/runner.go", "const steps = 17", "const steps = 16",
			"const steps = 16, but (*demo).run runs 17 steps",
		},
		"a step comment off by three": {
			demoDir + "/autoscale.go", "// 12. Scale one service", "// 9. Scale one service",
			"the comment of autoscale numbers it step 9; it is step 12",
		},
		"a step missing from docs/demo.md": {
			demoDoc, "\n17. Tear down", "\nTear down",
			`"## The steps" lists 16 steps; test/demo runs 17`,
		},
		"the step count in words": {
			demoDoc, "runs the same seventeen steps", "runs the same sixteen steps",
			`"sixteen steps", but test/demo runs 17 steps`,
		},
		"the step count in the README": {
			readme, "17 steps", "16 steps",
			`"16 steps", but test/demo runs 17 steps`,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			root := copyDemo(t)
			if err := checkDemoSteps(root); err != nil {
				t.Fatalf("the copy fails before the drift: %v", err)
			}
			plant(t, root, c.rel, c.old, c.repl)
			err := checkDemoSteps(root)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("with the drift: %v; want an error containing %q", err, c.want)
			}
		})
	}
}

// TestLayoutDrift plants each kind of layout drift in a small repository.
func TestLayoutDrift(t *testing.T) {
	const table = "# x\n\n## Layout\n\n| folder | what it holds |\n|---|---|\n" +
		"| `engine/` | the renderer: `preset`, `internal/corpus` |\n" +
		"| `test/demo/`, `test/localcluster/` | the demo (`detach`) |\n\n## Next\n"
	layout := func(t *testing.T) string {
		t.Helper()
		root := t.TempDir()
		write(t, root, readme, table)
		for _, dir := range []string{"engine", "engine/preset", "engine/internal/corpus", "test/demo", "test/localcluster", "test/localcluster/detach"} {
			write(t, root, dir+"/x.go", "package x\n")
		}
		write(t, root, "engine/testdata/case/x.go", "package ignored\n")
		if err := checkLayout(root); err != nil {
			t.Fatalf("the small repository fails before the drift: %v", err)
		}
		return root
	}
	t.Run("a new package", func(t *testing.T) {
		root := layout(t)
		write(t, root, "test/podwatch/x.go", "package podwatch\n")
		want := "the layout table leaves out test/podwatch/"
		if err := checkLayout(root); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v; want an error containing %q", err, want)
		}
	})
	t.Run("a sub-package its parent's row does not name", func(t *testing.T) {
		root := layout(t)
		write(t, root, "engine/merge/x.go", "package merge\n")
		want := "the layout table leaves out engine/merge/"
		if err := checkLayout(root); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v; want an error containing %q", err, want)
		}
	})
	t.Run("a row naming a folder that is gone", func(t *testing.T) {
		root := layout(t)
		plant(t, root, readme, "`test/demo/`,", "`test/demo/`, `test/gone/`,")
		want := "the layout table names test/gone, which does not exist"
		if err := checkLayout(root); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v; want an error containing %q", err, want)
		}
	})
	t.Run("the README of f1526b2", func(t *testing.T) {
		// Seven packages were missing from the table at f1526b2; the
		// check finds them in today's tree.
		rows, err := readLayout(layoutAtF1526b2)
		if err != nil {
			t.Fatal(err)
		}
		dirs, err := goFolders(repo)
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		for _, d := range dirs {
			if d != "." && !covered(rows, d) {
				missing = append(missing, d)
			}
		}
		if len(missing) == 0 {
			t.Fatal("the f1526b2 layout table passes; want it to leave packages out")
		}
		t.Logf("left out at f1526b2: %v", missing)
	})
}
