package endpointpicker

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// runnerFile is where an endpoint picker registers its in-tree plugins, in
// GIE up to v1.5 and in llm-d-router alike.
const runnerFile = "cmd/epp/runner/runner.go"

// extractRegistrations reads, from the source tree at root (a Go module),
// the plugin types that runnerFile registers: every call of a Register*
// function of the package registry (an import path), whose first argument
// names the type. A Register*Deprecated* call's two string arguments are the
// releases that deprecate and remove the type, and its last argument the
// type that replaces it.
func extractRegistrations(root, registry string) ([]RegisteredType, error) {
	modBytes, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("read the module of %s: %w", root, err)
	}
	module := ""
	for _, line := range strings.Split(string(modBytes), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			module = strings.Trim(strings.TrimSpace(m), `"`)
			break
		}
	}
	if module == "" {
		return nil, fmt.Errorf("%s/go.mod names no module", root)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, filepath.Join(root, runnerFile), nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", runnerFile, err)
	}
	imports := importNames(file)
	r := resolver{root: root, module: module, fset: fset, consts: map[string]map[string]constant{}}
	var out []RegisteredType
	var walkErr error
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || walkErr != nil {
			return walkErr == nil
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !strings.HasPrefix(sel.Sel.Name, "Register") || len(call.Args) == 0 {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || imports[x.Name] != registry {
			return true
		}
		at := fset.Position(call.Pos())
		typ, err := r.value(call.Args[0], imports)
		if err != nil {
			walkErr = fmt.Errorf("%s:%d: %w", runnerFile, at.Line, err)
			return false
		}
		reg := RegisteredType{Type: typ.value, Source: typ.source}
		if strings.Contains(sel.Sel.Name, "Deprecated") {
			var releases []string
			for _, a := range call.Args[1:] {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					releases = append(releases, s)
				}
			}
			if len(releases) != 2 {
				walkErr = fmt.Errorf("%s:%d: %s of %s: want two releases (deprecated, removed), found %q", runnerFile, at.Line, sel.Sel.Name, typ.value, releases)
				return false
			}
			repl, err := r.value(call.Args[len(call.Args)-1], imports)
			if err != nil {
				walkErr = fmt.Errorf("%s:%d: replacement of %s: %w", runnerFile, at.Line, typ.value, err)
				return false
			}
			reg.Deprecated = &Deprecation{Since: releases[0], RemovedIn: releases[1], Replacement: repl.value}
		}
		out = append(out, reg)
		return true
	})
	if walkErr != nil {
		return nil, walkErr
	}
	slices.SortFunc(out, func(a, b RegisteredType) int { return strings.Compare(a.Type, b.Type) })
	// A type registered twice (llm-d-router registers the P/D role filters
	// twice) is one registration.
	out = slices.CompactFunc(out, func(a, b RegisteredType) bool { return a.Type == b.Type })
	return out, nil
}

// importNames maps the names a file uses for its imports to their paths
// (the last element of the path unless the import names it).
func importNames(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = path
	}
	return out
}

type constant struct{ value, source string }

// resolver finds the string values of constants in the module's packages.
type resolver struct {
	root, module string
	fset         *token.FileSet
	// consts caches each package's string constants by import path.
	consts map[string]map[string]constant
}

// value is the string an argument names: a constant of an imported package
// of the module (pkg.Name) or a string literal.
func (r *resolver) value(e ast.Expr, imports map[string]string) (constant, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(e.Value)
		return constant{value: s, source: runnerFile}, err
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok {
			break
		}
		path, ok := imports[x.Name]
		if !ok {
			return constant{}, fmt.Errorf("%s.%s: %s is not an import", x.Name, e.Sel.Name, x.Name)
		}
		consts, err := r.packageConsts(path)
		if err != nil {
			return constant{}, err
		}
		c, ok := consts[e.Sel.Name]
		if !ok {
			return constant{}, fmt.Errorf("%s.%s: no string constant %s in %s", x.Name, e.Sel.Name, e.Sel.Name, path)
		}
		return c, nil
	}
	return constant{}, fmt.Errorf("argument %T is neither a string nor a constant of a package", e)
}

// packageConsts reads the string constants of a package of the module,
// including one that is another constant of the same package.
func (r *resolver) packageConsts(path string) (map[string]constant, error) {
	if c, ok := r.consts[path]; ok {
		return c, nil
	}
	rel, ok := strings.CutPrefix(path, r.module+"/")
	if !ok {
		return nil, fmt.Errorf("package %s is not in module %s", path, r.module)
	}
	dir := filepath.Join(r.root, filepath.FromSlash(rel))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("package %s: %w", path, err)
	}
	out := map[string]constant{}
	aliases := map[string]string{}    // const A = B
	foreign := map[string][2]string{} // const A = pkg.B: import path, name
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(r.fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("package %s: %w", path, err)
		}
		source := filepath.ToSlash(filepath.Join(rel, name))
		fileImports := importNames(f)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					switch v := vs.Values[i].(type) {
					case *ast.BasicLit:
						if v.Kind == token.STRING {
							s, _ := strconv.Unquote(v.Value)
							out[n.Name] = constant{value: s, source: source}
						}
					case *ast.Ident:
						aliases[n.Name] = v.Name
					case *ast.SelectorExpr:
						// Only the module's own constants can name a type.
						if x, ok := v.X.(*ast.Ident); ok && strings.HasPrefix(fileImports[x.Name], r.module+"/") {
							foreign[n.Name] = [2]string{fileImports[x.Name], v.Sel.Name}
						}
					}
				}
			}
		}
	}
	for a, b := range aliases {
		if c, ok := out[b]; ok {
			out[a] = c
		}
	}
	r.consts[path] = out
	for a, ref := range foreign {
		other, err := r.packageConsts(ref[0])
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", path, a, err)
		}
		if c, ok := other[ref[1]]; ok {
			out[a] = c
		}
	}
	return out, nil
}
