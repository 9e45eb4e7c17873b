package template

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	tparse "text/template/parse"
)

// Presets and services are other teams' input, and the controller renders
// them for every namespace. A template must therefore not be able to take
// the renderer's time or memory, nor render differently from one run to the
// next. The sandbox here makes that so:
//
//   - functions that read the clock, random numbers, the network or make
//     keys are removed (see hermetic);
//   - define, block and template actions are refused, so a template cannot
//     recurse;
//   - every function call and every loop iteration of one execution is
//     counted against maxSteps, and the bytes functions read and return
//     against maxWork; a range over a number or a collection is counted
//     before it starts;
//   - values are printed without pointer addresses: text/template and fmt
//     print a pointer inside a struct, list or map as its address, which
//     changes from run to run.
//
// It works by rewriting the parse tree once, when a text is parsed: every
// call of a function gets the root data ($) as a hidden first argument,
// which carries the execution's budget; every range pipeline ends in
// rangeLimit and every printing action in printable.

// Limits of one template execution.
const (
	maxSteps = 100000
	maxWork  = 16 * MaxOutput
)

// budget is what one execution has used.
type budget struct {
	steps int
	work  int
}

func (b *budget) step(n int) error {
	b.steps += n
	if b.steps > maxSteps {
		return fmt.Errorf("the template makes more than %d function calls and loop iterations", maxSteps)
	}
	return nil
}

func (b *budget) charge(n int) error {
	b.work += n
	if b.work > maxWork {
		return fmt.Errorf("the template's functions read and write more than %d bytes", maxWork)
	}
	return nil
}

// Names of the functions the rewrite adds.
const (
	fnRangeLimit = "rangeLimit"
	fnPrintable  = "printable"
)

// nonHermetic are functions of sprig's HermeticTxtFuncMap that still read
// the clock or random numbers, make keys (seconds of CPU each) or hash
// passwords (scrypt and bcrypt, slow on purpose).
var nonHermetic = []string{
	"ago", "toDate", "mustToDate", "unixEpoch",
	"randInt", "shuffle",
	"bcrypt", "htpasswd", "derivePassword", "encryptAES",
	"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
	"genSignedCert", "genSignedCertWithKey",
}

// formatting are the functions that print their arguments with fmt; their
// arguments go through printable first.
var formatting = []string{
	"print", "printf", "println", "html", "js", "urlquery",
	"toString", "toStrings", "quote", "squote", "cat", "join", "sortAlpha",
}

// sandboxed wraps every function of f so that it takes the root data as its
// first argument and counts against the execution's budget, and adds the
// builtins that print (print, printf, ...) and the functions the rewrite
// inserts.
func sandboxed(f template.FuncMap) template.FuncMap {
	f["print"] = fmt.Sprint
	f["printf"] = fmt.Sprintf
	f["println"] = fmt.Sprintln
	f["html"] = template.HTMLEscaper
	f["js"] = template.JSEscaper
	f["urlquery"] = template.URLQueryEscaper
	out := make(template.FuncMap, len(f)+2)
	for name, fn := range f {
		out[name] = wrap(fn, slices.Contains(formatting, name))
	}
	out[fnRangeLimit] = rangeLimit
	out[fnPrintable] = printableCall
	return out
}

var (
	anyType   = reflect.TypeFor[any]()
	errorType = reflect.TypeFor[error]()
)

// wrap returns fn with the root data as an extra first parameter, counting
// each call and the bytes it reads and returns. When format is set, its
// interface arguments are made printable first.
func wrap(fn any, format bool) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	in := make([]reflect.Type, 0, t.NumIn()+1)
	in = append(in, anyType)
	for i := range t.NumIn() {
		in = append(in, t.In(i))
	}
	out := []reflect.Type{t.Out(0), errorType}
	hasErr := t.NumOut() == 2
	wt := reflect.FuncOf(in, out, t.IsVariadic())
	return reflect.MakeFunc(wt, func(args []reflect.Value) []reflect.Value {
		fail := func(err error) []reflect.Value {
			return []reflect.Value{reflect.Zero(t.Out(0)), reflect.ValueOf(&err).Elem()}
		}
		b, err := budgetOf(args[0])
		if err != nil {
			return fail(err)
		}
		args = args[1:]
		if err := b.step(1); err != nil {
			return fail(err)
		}
		read := 0
		for i, a := range args {
			read += size(a)
			if format {
				args[i] = plainParam(wt.In(i+1), a, t.IsVariadic() && i == len(args)-1)
			}
		}
		if err := b.charge(read); err != nil {
			return fail(err)
		}
		var res []reflect.Value
		if t.IsVariadic() {
			res = v.CallSlice(args)
		} else {
			res = v.Call(args)
		}
		if hasErr && !res[1].IsNil() {
			return fail(res[1].Interface().(error))
		}
		if err := b.charge(size(res[0])); err != nil {
			return fail(err)
		}
		return []reflect.Value{res[0], reflect.Zero(errorType)}
	}).Interface()
}

// budgetOf finds the budget in the root data.
func budgetOf(root reflect.Value) (*budget, error) {
	if root.Kind() == reflect.Interface {
		root = root.Elem()
	}
	if d, ok := root.Interface().(*Data); ok && d != nil && d.budget != nil {
		return d.budget, nil
	}
	return nil, errors.New("the root data ($) was replaced")
}

// size estimates the bytes a value holds: strings and byte slices by their
// length, collections by their items at the first level.
func size(v reflect.Value) int {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return v.Len()
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Len()
		}
		n := 8 * v.Len()
		for i := range v.Len() {
			if e := v.Index(i); e.Kind() == reflect.String || (e.Kind() == reflect.Interface && e.Elem().Kind() == reflect.String) {
				n += len(e.Interface().(string))
			}
		}
		return n
	case reflect.Map:
		n := 16 * v.Len()
		for it := v.MapRange(); it.Next(); {
			if k := it.Key(); k.Kind() == reflect.String {
				n += k.Len()
			}
			if e := it.Value(); e.Kind() == reflect.String || (e.Kind() == reflect.Interface && e.Elem().Kind() == reflect.String) {
				n += len(e.Interface().(string))
			}
		}
		return n
	default:
		return 8
	}
}

// rangeLimit passes a range's value through after counting its iterations.
func rangeLimit(root, v any) (any, error) {
	b, err := budgetOf(reflect.ValueOf(root))
	if err != nil {
		return nil, err
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	n := 0
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n = int(min(max(rv.Int(), 0), maxSteps+1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n = int(min(rv.Uint(), maxSteps+1)) //nolint:gosec // bounded by maxSteps+1, which fits an int
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String, reflect.Chan:
		n = rv.Len()
	}
	if b.steps+n > maxSteps {
		return nil, fmt.Errorf("range over %d items: the template loops more than %d times", n, maxSteps)
	}
	return v, b.step(n)
}

// printableCall is the last command of a printing action: it returns the
// value as text/template would print it, but with pointers inside structs,
// lists and maps followed instead of printed as addresses.
func printableCall(root, v any) (any, error) {
	b, err := budgetOf(reflect.ValueOf(root))
	if err != nil {
		return nil, err
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() && !implementsPrinter(rv.Type()) {
		rv = rv.Elem()
	}
	if !rv.IsValid() || rv.Kind() == reflect.Pointer || implementsPrinter(rv.Type()) || !mayHoldPointers(rv.Type(), 0) {
		return v, nil
	}
	var out strings.Builder
	format(&out, rv, 0)
	return out.String(), b.charge(out.Len())
}

// plainParam prepares an argument of a function that prints its arguments
// with fmt: an interface parameter gets plainArg of its value, and each
// item of a variadic interface parameter too.
func plainParam(t reflect.Type, v reflect.Value, variadic bool) reflect.Value {
	switch {
	case variadic && t.Elem().Kind() == reflect.Interface:
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			if p := plainArg(v.Index(i)); p.IsValid() {
				out.Index(i).Set(p)
			}
		}
		return out
	case !variadic && t.Kind() == reflect.Interface:
		if p := plainArg(v); p.IsValid() {
			return p
		}
		return reflect.Zero(t)
	}
	return v
}

// plainArg follows pointers, makes lists of pointers lists of what they
// point to, and turns structs and maps that hold pointers into their text,
// so fmt prints no address.
func plainArg(v reflect.Value) reflect.Value {
	if v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() || implementsPrinter(v.Type()) {
			return v
		}
		v = v.Elem()
	}
	if !v.IsValid() || implementsPrinter(v.Type()) || !mayHoldPointers(v.Type(), 0) {
		return v
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		out := make([]any, v.Len())
		for i := range v.Len() {
			if p := plainArg(v.Index(i)); p.IsValid() && p.CanInterface() {
				out[i] = p.Interface()
			}
		}
		return reflect.ValueOf(out)
	default:
		var b strings.Builder
		format(&b, v, 0)
		return reflect.ValueOf(b.String())
	}
}

var stringerType = reflect.TypeFor[fmt.Stringer]()

func implementsPrinter(t reflect.Type) bool {
	return t.Implements(stringerType) || t.Implements(errorType)
}

// mayHoldPointers reports whether fmt could print an address for a value of
// type t: it holds a pointer, an interface, a func or a channel.
func mayHoldPointers(t reflect.Type, depth int) bool {
	if depth > 16 {
		return true
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return true
	case reflect.Slice, reflect.Array:
		return mayHoldPointers(t.Elem(), depth+1)
	case reflect.Map:
		return mayHoldPointers(t.Key(), depth+1) || mayHoldPointers(t.Elem(), depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			if mayHoldPointers(t.Field(i).Type, depth+1) {
				return true
			}
		}
	}
	return false
}

// format writes v the way fmt's %v does, following pointers, skipping
// unexported fields and sorting map keys by their text.
func format(b *strings.Builder, v reflect.Value, depth int) {
	if depth > 32 {
		b.WriteString("...")
		return
	}
	if !v.IsValid() {
		b.WriteString("<nil>")
		return
	}
	if v.CanInterface() && implementsPrinter(v.Type()) {
		if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
			b.WriteString("<nil>")
			return
		}
		fmt.Fprint(b, v.Interface())
		return
	}
	if v.CanInterface() && v.Kind() != reflect.Pointer && reflect.PointerTo(v.Type()).Implements(stringerType) {
		p := reflect.New(v.Type())
		p.Elem().Set(v)
		fmt.Fprint(b, p.Interface())
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("<nil>")
			return
		}
		format(b, v.Elem(), depth+1)
	case reflect.Struct:
		b.WriteByte('{')
		first := true
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			if !first {
				b.WriteByte(' ')
			}
			first = false
			format(b, v.Field(i), depth+1)
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(' ')
			}
			format(b, v.Index(i), depth+1)
		}
		b.WriteByte(']')
	case reflect.Map:
		type entry struct{ k, v string }
		entries := make([]entry, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			var k, e strings.Builder
			format(&k, it.Key(), depth+1)
			format(&e, it.Value(), depth+1)
			entries = append(entries, entry{k.String(), e.String()})
		}
		slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.k, b.k) })
		b.WriteString("map[")
		for i, e := range entries {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(e.k + ":" + e.v)
		}
		b.WriteByte(']')
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		b.WriteString("<" + v.Type().String() + ">")
	default:
		if v.CanInterface() {
			fmt.Fprint(b, v.Interface())
		}
	}
}

// rewrite refuses what the sandbox cannot bound and inserts the root data
// and the limits into the parse tree of t.
func rewrite(t *template.Template) error {
	if len(t.Templates()) > 1 {
		return errors.New("define and block are not supported in presets")
	}
	return rewriteList(t.Root)
}

func rewriteList(list *tparse.ListNode) error {
	if list == nil {
		return nil
	}
	for _, n := range list.Nodes {
		if err := rewriteNode(n); err != nil {
			return err
		}
	}
	return nil
}

func rewriteNode(n tparse.Node) error {
	switch n := n.(type) {
	case *tparse.ActionNode:
		if err := rewritePipe(n.Pipe); err != nil {
			return err
		}
		if len(n.Pipe.Decl) == 0 {
			n.Pipe.Cmds = append(n.Pipe.Cmds, call(fnPrintable, n.Pipe.Position()))
		}
	case *tparse.IfNode:
		return rewriteBranch(&n.BranchNode)
	case *tparse.WithNode:
		return rewriteBranch(&n.BranchNode)
	case *tparse.RangeNode:
		if err := rewriteBranch(&n.BranchNode); err != nil {
			return err
		}
		n.Pipe.Cmds = append(n.Pipe.Cmds, call(fnRangeLimit, n.Pipe.Position()))
	case *tparse.TemplateNode:
		return fmt.Errorf("%s: template actions are not supported in presets", n)
	}
	return nil
}

func rewriteBranch(b *tparse.BranchNode) error {
	if err := rewritePipe(b.Pipe); err != nil {
		return err
	}
	if err := rewriteList(b.List); err != nil {
		return err
	}
	return rewriteList(b.ElseList)
}

func rewritePipe(p *tparse.PipeNode) error {
	if p == nil {
		return nil
	}
	for _, v := range p.Decl {
		if v.Ident[0] == "$" {
			return errors.New("$ cannot be declared or assigned")
		}
	}
	for _, c := range p.Cmds {
		args := make([]tparse.Node, 0, len(c.Args)+1)
		for i, arg := range c.Args {
			args = append(args, arg)
			switch a := arg.(type) {
			case *tparse.IdentifierNode:
				if _, ok := funcs[a.Ident]; !ok {
					continue
				}
				if i == 0 {
					args = append(args, root(a.Position()))
				} else {
					// A function named as an argument is called without
					// arguments: (name $).
					args[len(args)-1] = &tparse.PipeNode{NodeType: tparse.NodePipe, Pos: a.Position(), Cmds: []*tparse.CommandNode{{
						NodeType: tparse.NodeCommand, Pos: a.Position(), Args: []tparse.Node{a, root(a.Position())},
					}}}
				}
			case *tparse.PipeNode:
				if err := rewritePipe(a); err != nil {
					return err
				}
			case *tparse.ChainNode:
				if pn, ok := a.Node.(*tparse.PipeNode); ok {
					if err := rewritePipe(pn); err != nil {
						return err
					}
				}
			}
		}
		c.Args = args
	}
	return nil
}

func root(pos tparse.Pos) *tparse.VariableNode {
	return &tparse.VariableNode{NodeType: tparse.NodeVariable, Pos: pos, Ident: []string{"$"}}
}

// call is the command "name $", for the end of a pipeline.
func call(name string, pos tparse.Pos) *tparse.CommandNode {
	return &tparse.CommandNode{NodeType: tparse.NodeCommand, Pos: pos, Args: []tparse.Node{
		tparse.NewIdentifier(name).SetPos(pos), root(pos),
	}}
}

// argCount matches text/template's message about a call's arguments, which
// counts the hidden root argument.
var argCount = regexp.MustCompile(`wrong number of args for (\w+): want (at least )?(\d+) got (\d+)`)

// uncountRoot takes the hidden root argument out of argument counts.
func uncountRoot(msg string) string {
	return argCount.ReplaceAllStringFunc(msg, func(m string) string {
		s := argCount.FindStringSubmatch(m)
		want, _ := strconv.Atoi(s[3])
		got, _ := strconv.Atoi(s[4])
		return fmt.Sprintf("wrong number of args for %s: want %s%d got %d", s[1], s[2], want-1, max(got-1, 0))
	})
}
