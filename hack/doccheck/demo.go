package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The demo's driver and the docs that count its steps.
const (
	demoDir   = "test/demo"
	demoDoc   = "docs/demo.md"
	readme    = "README.md"
	stepsHead = "## The steps"
)

var numberWords = map[string]int{
	"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
	"eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
	"eighteen": 18, "nineteen": 19, "twenty": 20, "twenty-one": 21, "twenty-two": 22, "twenty-three": 23,
}

var (
	wordSteps  = regexp.MustCompile(`(?i)\b(` + wordAlternatives() + `) steps\b`)
	digitSteps = regexp.MustCompile(`\b(\d+) steps\b`)
	numbered   = regexp.MustCompile(`^(\d+)\. `)
)

func wordAlternatives() string {
	words := make([]string, 0, len(numberWords))
	for w := range numberWords {
		words = append(words, w)
	}
	// Longest first, so that "twenty-one" is not read as "twenty".
	sort.Slice(words, func(i, j int) bool { return len(words[i]) > len(words[j]) })
	return strings.Join(words, "|")
}

// demoSteps is what test/demo's code says about its steps.
type demoSteps struct {
	// Names are the step methods in the order (*demo).run calls them.
	Names []string
	// Const is the value of the constant steps (the N of "3/N" lines).
	Const int
	// Numbered maps a method whose doc comment starts "K. " to K.
	Numbered map[string]int
}

// readDemoSteps parses the demo's Go files (not its tests).
func readDemoSteps(dir string) (*demoSteps, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := &demoSteps{Const: -1, Numbered: map[string]int{}}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if !onDemo(decl) {
					continue
				}
				if decl.Name.Name == "run" {
					out.Names = stepList(decl)
				}
				if decl.Doc != nil {
					if m := numbered.FindStringSubmatch(decl.Doc.Text()); m != nil {
						n, _ := strconv.Atoi(m[1])
						out.Numbered[decl.Name.Name] = n
					}
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					vs, ok := spec.(*ast.ValueSpec)
					if !ok || decl.Tok != token.CONST {
						continue
					}
					for i, id := range vs.Names {
						if id.Name != "steps" || i >= len(vs.Values) {
							continue
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.INT {
							out.Const, _ = strconv.Atoi(lit.Value)
						}
					}
				}
			}
		}
	}
	if len(out.Names) == 0 {
		return nil, fmt.Errorf("%s: found no list of steps in (*demo).run", dir)
	}
	return out, nil
}

// onDemo reports whether f is a method of *demo.
func onDemo(f *ast.FuncDecl) bool {
	if f.Recv == nil || len(f.Recv.List) != 1 {
		return false
	}
	star, ok := f.Recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "demo"
}

// stepList returns the methods named in run's list of step functions
// ([]func(context.Context) error{d.build, ...}).
func stepList(run *ast.FuncDecl) []string {
	var names []string
	ast.Inspect(run, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || names != nil {
			return names == nil
		}
		arr, ok := lit.Type.(*ast.ArrayType)
		if !ok {
			return true
		}
		if _, ok := arr.Elt.(*ast.FuncType); !ok {
			return true
		}
		for _, e := range lit.Elts {
			if sel, ok := e.(*ast.SelectorExpr); ok {
				names = append(names, sel.Sel.Name)
			}
		}
		return false
	})
	return names
}

// checkDemoSteps compares the demo's steps with what its code and docs say.
func checkDemoSteps(root string) error {
	s, err := readDemoSteps(filepath.Join(root, demoDir))
	if err != nil {
		return err
	}
	n := len(s.Names)
	var errs []error
	if s.Const != n {
		errs = append(errs, fmt.Errorf("%s: const steps = %d, but (*demo).run runs %d steps", demoDir, s.Const, n))
	}
	index := map[string]int{}
	for i, name := range s.Names {
		index[name] = i + 1
	}
	names := make([]string, 0, len(s.Numbered))
	for name := range s.Numbered {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		k := s.Numbered[name]
		switch i, ok := index[name]; {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: the comment of %s numbers it step %d, but it is not a step of (*demo).run", demoDir, name, k))
		case i != k:
			errs = append(errs, fmt.Errorf("%s: the comment of %s numbers it step %d; it is step %d", demoDir, name, k, i))
		}
	}
	doc, err := os.ReadFile(filepath.Join(root, demoDoc))
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	items := stepItems(string(doc))
	if len(items) != n {
		errs = append(errs, fmt.Errorf("%s: %q lists %d steps; test/demo runs %d", demoDoc, stepsHead, len(items), n))
	}
	for i, k := range items {
		if k != i+1 {
			errs = append(errs, fmt.Errorf("%s: %q: item %d is numbered %d", demoDoc, stepsHead, i+1, k))
			break
		}
	}
	texts := []string{demoDoc, readme}
	goFiles, err := filepath.Glob(filepath.Join(root, demoDir, "*.go"))
	if err != nil {
		return err
	}
	for _, f := range goFiles {
		rel, _ := filepath.Rel(root, f)
		texts = append(texts, rel)
	}
	for _, name := range texts {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range wordSteps.FindAllStringSubmatch(line, -1) {
				if k := numberWords[strings.ToLower(m[1])]; k != n {
					errs = append(errs, fmt.Errorf("%s:%d: %q, but test/demo runs %d steps", name, i+1, m[0], n))
				}
			}
			if name != readme {
				continue
			}
			for _, m := range digitSteps.FindAllStringSubmatch(line, -1) {
				if k, _ := strconv.Atoi(m[1]); k != n {
					errs = append(errs, fmt.Errorf("%s:%d: %q, but test/demo runs %d steps", name, i+1, m[0], n))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// stepItems returns the numbers of the top-level numbered list under the
// heading "## The steps", in order.
func stepItems(doc string) []int {
	_, rest, ok := strings.Cut(doc, "\n"+stepsHead+"\n")
	if !ok {
		return nil
	}
	var out []int
	for _, line := range strings.Split(rest, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if m := numbered.FindStringSubmatch(line); m != nil {
			k, _ := strconv.Atoi(m[1])
			out = append(out, k)
		}
	}
	return out
}
