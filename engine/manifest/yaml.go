package manifest

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// encodeYAML writes obj exactly as go.yaml.in/yaml/v2's Marshal does, but
// without reflection for the maps, lists and scalars unstructured objects
// hold: it writes most documents several times faster. A document with
// anything it does not reproduce byte for byte (a string with characters
// outside printable ASCII, a key longer than 128 bytes or with a line
// break, a block scalar that keeps trailing blank lines, a type other than
// the JSON ones) goes through yaml.v2 instead. TestWriterMatchesYAMLv2
// checks both agree.
func encodeYAML(obj map[string]any) ([]byte, error) {
	w := yamlWriter{buf: make([]byte, 0, 4096)}
	if err := w.document(obj); err == nil {
		return w.buf, nil
	} else if !errors.Is(err, errFallback) {
		return nil, err
	}
	return yamlv2.Marshal(obj)
}

// errFallback asks for yaml.v2 to write the document.
var errFallback = errors.New("not in the fast writer's subset")

// yaml.v2's emitter settings: indentation step and the column past which
// it breaks long scalars at a space.
const (
	yamlIndent     = 2
	yamlBestWidth  = 80
	maxSimpleKey   = 128
	plainProbeSize = 4096
)

// yamlWriter holds the output and the column, counted in bytes (the
// writer handles ASCII only, where bytes are characters).
type yamlWriter struct {
	buf []byte
	col int
}

func (w *yamlWriter) put(c byte) {
	w.buf = append(w.buf, c)
	w.col++
}

func (w *yamlWriter) putString(s string) {
	w.buf = append(w.buf, s...)
	w.col += len(s)
}

func (w *yamlWriter) newline() {
	w.buf = append(w.buf, '\n')
	w.col = 0
}

// lineAt starts a line at indent, as the emitter does before a key or a
// list item: a line break unless the line is still empty.
func (w *yamlWriter) lineAt(indent int) {
	if w.col > 0 {
		w.newline()
	}
	w.pad(indent)
}

func (w *yamlWriter) pad(indent int) {
	for w.col < indent {
		w.buf = append(w.buf, ' ')
		w.col++
	}
}

func (w *yamlWriter) document(obj map[string]any) error {
	if len(obj) == 0 {
		w.putString("{}")
	} else if err := w.mapping(obj, 0, false); err != nil {
		return err
	}
	if w.col > 0 {
		w.newline()
	}
	return nil
}

// mapping writes a non-empty map with its keys at indent; inline puts the
// first key where the line is (after "- ").
func (w *yamlWriter) mapping(m map[string]any, indent int, inline bool) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	for i, k := range keys {
		if i > 0 || !inline {
			w.lineAt(indent)
		}
		if err := w.key(k); err != nil {
			return err
		}
		w.put(':')
		if err := w.node(m[k], indent, false); err != nil {
			return err
		}
	}
	return nil
}

// sequence writes a non-empty list with its "- " at indent.
func (w *yamlWriter) sequence(s []any, indent int, inline bool) error {
	for i, v := range s {
		if i > 0 || !inline {
			w.lineAt(indent)
		}
		w.put('-')
		if err := w.node(v, indent, true); err != nil {
			return err
		}
	}
	return nil
}

// node writes the value after "key:" (inSequence false) or "-" at indent.
// A map goes on the next lines, or on the same one after "- "; a list in
// a map is not indented further.
func (w *yamlWriter) node(v any, indent int, inSequence bool) error {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			w.putString(" {}")
			return nil
		}
		if inSequence {
			w.put(' ')
		}
		return w.mapping(t, indent+yamlIndent, inSequence)
	case []any:
		if len(t) == 0 {
			w.putString(" []")
			return nil
		}
		if !inSequence {
			return w.sequence(t, indent, false)
		}
		w.put(' ')
		return w.sequence(t, indent+yamlIndent, true)
	}
	return w.scalar(v, indent+yamlIndent)
}

// scalar writes a value after "key:" or "-"; indent is where the emitter
// continues a broken line.
func (w *yamlWriter) scalar(v any, indent int) error {
	switch t := v.(type) {
	case string:
		return w.str(t, indent, false)
	case nil:
		w.putString(" null")
	case bool:
		w.putString(" " + strconv.FormatBool(t))
	case int64:
		n := len(w.buf)
		w.buf = strconv.AppendInt(append(w.buf, ' '), t, 10)
		w.col += len(w.buf) - n
	case float64:
		s := strconv.FormatFloat(t, 'g', -1, 64)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		w.putString(" " + s)
	default:
		return errFallback
	}
	return nil
}

// key writes a map key; the emitter never breaks keys.
func (w *yamlWriter) key(k string) error {
	if len(k) > maxSimpleKey {
		return errFallback
	}
	return w.str(k, 0, true)
}

// Scalar styles.
type scalarStyle int

const (
	stylePlain scalarStyle = iota
	styleSingle
	styleDouble
	styleLiteral
)

// str writes a string in the style yaml.v2 picks for it.
func (w *yamlWriter) str(s string, indent int, isKey bool) error {
	a, ok := analyze(s)
	if !ok {
		return errFallback
	}
	if isKey && a.multiline {
		return errFallback // a complex key ("? ")
	}
	style := styleDouble
	switch {
	case a.multiline:
		style = styleLiteral
	case canUsePlain(s):
		style = stylePlain
	}
	if style == stylePlain && (!a.blockPlain || (s == "" && isKey)) {
		style = styleSingle
	}
	if style == styleSingle && !a.single {
		style = styleDouble
	}
	if style == styleLiteral && (!a.block || isKey) {
		style = styleDouble
	}
	if isKey {
		indent = -1 // keys never break
	}
	if style == styleLiteral {
		return w.literal(s, indent)
	}
	if !isKey {
		w.put(' ')
	}
	if style == styleDouble {
		return w.double(s, indent)
	}
	w.breakable(s, indent, style == styleSingle)
	return nil
}

// breakHere reports whether the emitter would break the line at a space.
func (w *yamlWriter) breakHere(indent int) bool {
	return indent >= 0 && w.col > yamlBestWidth
}

// breakable writes s plain or, with quoted, in single quotes, breaking
// the line at a lone space past the 80th column. (A plain scalar neither
// starts nor ends with a space, so the tests of the ends only matter
// quoted.)
func (w *yamlWriter) breakable(s string, indent int, quoted bool) {
	if quoted {
		w.put('\'')
	}
	// Breaks happen at a space past the 80th column, and never in keys.
	noBreak := indent < 0 || w.col+len(s) <= yamlBestWidth || strings.IndexByte(s, ' ') < 0
	if noBreak && (!quoted || strings.IndexByte(s, '\'') < 0) {
		w.putString(s)
		if quoted {
			w.put('\'')
		}
		return
	}
	spaces := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' {
			if !spaces && w.breakHere(indent) && i > 0 && i < len(s)-1 && s[i+1] != ' ' {
				w.newline()
				w.pad(indent)
			} else {
				w.put(c)
			}
			spaces = true
			continue
		}
		if quoted && c == '\'' {
			w.put('\'')
		}
		w.put(c)
		spaces = false
	}
	if quoted {
		w.put('\'')
	}
}

func (w *yamlWriter) double(s string, indent int) error {
	if indent >= yamlBestWidth {
		return errFallback // the emitter's line-start test differs this deep
	}
	w.put('"')
	spaces := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			w.put('\\')
			w.put(c)
			spaces = false
		case '\n':
			w.put('\\')
			w.put('n')
			spaces = false
		case ' ':
			if !spaces && w.breakHere(indent) && i > 0 && i < len(s)-1 {
				w.newline()
				w.pad(indent)
				if s[i+1] == ' ' {
					w.put('\\')
				}
			} else {
				w.put(c)
			}
			spaces = true
		default:
			w.put(c)
			spaces = false
		}
	}
	w.put('"')
	return nil
}

func (w *yamlWriter) literal(s string, indent int) error {
	n := len(s)
	if s[n-1] == '\n' && (n == 1 || s[n-2] == '\n') {
		return errFallback // "keep" chomping: the emitter may end the stream with "..."
	}
	w.putString(" |")
	if s[0] == ' ' || s[0] == '\n' {
		w.put('0' + yamlIndent)
	}
	if s[n-1] != '\n' {
		w.put('-')
	}
	w.newline()
	lineStart := true
	for i := 0; i < n; i++ {
		c := s[i]
		if c == '\n' {
			w.newline()
			lineStart = true
			continue
		}
		if lineStart {
			w.pad(indent)
			lineStart = false
		}
		w.put(c)
	}
	return nil
}

// analysis is what yaml.v2's emitter learns about a scalar to pick its
// style, for printable ASCII and line breaks (the only characters the
// writer takes) outside flow collections.
type analysis struct {
	multiline, blockPlain, single, block bool
}

// analyze reports, besides the analysis, whether s holds only printable
// ASCII and line breaks.
func analyze(s string) (analysis, bool) {
	if s == "" {
		return analysis{blockPlain: true, single: true}, true
	}
	n := len(s)
	indicators := strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...")
	var lineBreaks, breakSpace, spaceBreak, prevSpace, prevBreak bool
	preceded := true
	for i := 0; i < n; i++ {
		c := s[i]
		if (c < 0x20 && c != '\n') || c > 0x7e {
			return analysis{}, false
		}
		followed := i+1 >= n || s[i+1] == ' '
		if i == 0 {
			switch c {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				indicators = true
			case '?', ':', '-':
				if followed {
					indicators = true
				}
			}
		} else {
			switch c {
			case ':':
				if followed {
					indicators = true
				}
			case '#':
				if preceded {
					indicators = true
				}
			}
		}
		switch c {
		case ' ':
			if prevBreak {
				breakSpace = true
			}
			prevSpace, prevBreak = true, false
		case '\n':
			lineBreaks = true
			if prevSpace {
				spaceBreak = true
			}
			prevSpace, prevBreak = false, true
		default:
			prevSpace, prevBreak = false, false
		}
		preceded = c == ' ' || c == '\n'
	}
	edges := s[0] == ' ' || s[0] == '\n' || s[n-1] == ' ' || s[n-1] == '\n'
	return analysis{
		multiline:  lineBreaks,
		blockPlain: !edges && !breakSpace && !spaceBreak && !lineBreaks && !indicators,
		single:     !breakSpace && !spaceBreak,
		block:      s[n-1] != ' ' && !spaceBreak,
	}, true
}

// plainWords are the words yaml.v2 reads as booleans or null, which it
// therefore quotes, among those that start with a letter or "~".
var plainWords = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"true": true, "True": true, "TRUE": true,
	"on": true, "On": true, "ON": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true,
	"false": true, "False": true, "FALSE": true,
	"off": true, "Off": true, "OFF": true,
	"~": true, "null": true, "Null": true, "NULL": true,
}

// canUsePlain reports whether yaml.v2 would write s unquoted as far as its
// meaning goes: s must read back as a string. Strings that could be
// numbers, timestamps or base-60 floats (a leading digit, sign or dot) are
// asked of yaml.v2 itself, once each.
func canUsePlain(s string) bool {
	if s == "" {
		return false
	}
	switch c := s[0]; {
	case c == '+' || c == '-' || c == '.' || c >= '0' && c <= '9':
		return probePlain(s)
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		return !plainWords[s]
	}
	return true
}

var probe struct {
	sync.Mutex
	plain map[string]bool
}

// probePlain asks yaml.v2 how it writes s alone: for a one-line string of
// printable ASCII, it quotes it with double quotes exactly when s would
// not read back as a string.
func probePlain(s string) bool {
	probe.Lock()
	defer probe.Unlock()
	if v, ok := probe.plain[s]; ok {
		return v
	}
	if probe.plain == nil || len(probe.plain) >= plainProbeSize {
		probe.plain = map[string]bool{}
	}
	out, err := yamlv2.Marshal(s)
	v := err == nil && len(out) > 0 && out[0] != '"'
	probe.plain[s] = v
	return v
}

// compareKeys orders map keys as yaml.v2 does: letters by code point,
// runs of digits by their number, and a letter after anything else.
// Keys of a map are distinct, so one comparison decides.
func compareKeys(a, b string) int {
	if a == b {
		return 0
	}
	if keyLess(a, b) {
		return -1
	}
	return 1
}

func keyLess(a, b string) bool {
	if isASCII(a) && isASCII(b) {
		return keyLessIn([]byte(a), []byte(b), func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' },
			func(c byte) bool { return '0' <= c && c <= '9' })
	}
	return keyLessIn([]rune(a), []rune(b), unicode.IsLetter, unicode.IsDigit)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// keyLessIn is yaml.v2's key order over bytes (ASCII keys, where they are
// characters) or runes.
func keyLessIn[C byte | rune](ar, br []C, isLetter, isDigit func(C) bool) bool {
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al, bl := isLetter(ar[i]), isLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && isDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		var ai, bi int
		for ai = i; ai < len(ar) && isDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && isDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

// encodeAll encodes objects on every core, keeping their order.
func encodeAll(objs []*unstructured.Unstructured) ([][]byte, error) {
	out := make([][]byte, len(objs))
	errs := make([]error, len(objs))
	parallel(len(objs), func(i int) {
		if out[i], errs[i] = encodeYAML(objs[i].Object); errs[i] != nil {
			errs[i] = fmt.Errorf("encode %s %s: %w", objs[i].GetKind(), objs[i].GetName(), errs[i])
		}
	})
	return out, errors.Join(errs...)
}

// parallel calls do for 0..n-1 on every core, or inline when n is too
// small for that to pay.
func parallel(n int, do func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n/8)
	if workers < 2 {
		for i := range n {
			do(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				do(i)
			}
		})
	}
	wg.Wait()
}
