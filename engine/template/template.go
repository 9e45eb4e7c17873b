package template

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/fieldpath"
	"github.com/opendatahub-io/odh-serving/engine/naming"
)

// GlobalConfig is platform configuration templates may read.
type GlobalConfig struct {
	// SystemNamespace is where odh-serving and the shared presets live.
	SystemNamespace string
	// IngressGatewayName and IngressGatewayNamespace name the Gateway a
	// managed route attaches to.
	IngressGatewayName      string
	IngressGatewayNamespace string
	// Images maps image keys to references: {{ .GlobalConfig.Images.vllm }}.
	Images map[string]string
}

// Data is what a template sees.
type Data struct {
	ObjectMeta   metav1.ObjectMeta
	Spec         v1alpha2.LLMInferenceServiceSpec
	GlobalConfig GlobalConfig

	// budget is what the current execution has used (see sandbox.go).
	budget *budget
}

// Error is a template that failed, with where it was.
type Error struct {
	// Path is the field the template is in.
	Path string
	// Origin is the layer (preset or service) that set the field.
	Origin string
	// Text is the template.
	Text string
	Err  error
}

func (e *Error) Error() string {
	from := ""
	if e.Origin != "" {
		from = " (set by " + e.Origin + ")"
	}
	text := strconv.Quote(e.Text)
	if envValue.MatchString(e.Path) {
		// The message reaches the service's status and the controller's
		// log; an env value may hold a token.
		text = "(the text of an env value is not shown)"
	}
	return fmt.Sprintf("template in %s%s: %s: %v", e.Path, from, text, e.Err)
}

// envValue matches the path of a container's env value.
var envValue = regexp.MustCompile(`\.env\[[^\]]*\]\.value$`)

func (e *Error) Unwrap() error { return e.Err }

// Evaluate replaces every template in spec with its result. origin names the
// layer that set a path, for error messages; it may be nil. Every failing
// template is reported, not only the first.
func Evaluate(spec *v1alpha2.LLMInferenceServiceSpec, data *Data, origin func(path string) string) error {
	var errs []error
	err := fieldpath.Walk("spec", spec, fieldpath.Strings, func(path *fieldpath.Path, v reflect.Value) error {
		if v.Kind() != reflect.String || !strings.Contains(v.String(), "{{") {
			return nil
		}
		text := v.String()
		out, err := Execute(text, data)
		if err != nil {
			e := &Error{Path: path.String(), Text: text, Err: err}
			if origin != nil {
				e.Origin = origin(e.Path)
			}
			errs = append(errs, e)
			return nil
		}
		v.SetString(out)
		return nil
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

// Execute evaluates one template text against data.
func Execute(text string, data *Data) (string, error) {
	t, err := parse(text)
	if err != nil {
		return "", err
	}
	buf := &limitedBuffer{limit: MaxOutput}
	run := *data
	run.budget = &budget{}
	if err := t.Execute(buf, &run); err != nil {
		return "", errors.New(clean(err.Error()))
	}
	return buf.String(), nil
}

// Parsed templates are cached by their text: presets repeat the same few
// texts for every service. The cache is bounded so user strings cannot grow
// it without end.
var (
	cacheMu sync.RWMutex
	cache   = map[string]*template.Template{}
)

const cacheLimit = 4096

// blank is the template every text is parsed into a clone of: adding
// sprig's functions checks each of them by reflection, which a clone's
// copy of the checked table skips (that was about a twentieth of a
// one-service post-render's CPU, once per distinct template).
var blank = sync.OnceValue(func() *template.Template {
	return template.New("field").Option("missingkey=error").Funcs(funcs)
})

func parse(text string) (*template.Template, error) {
	cacheMu.RLock()
	t, ok := cache[text]
	cacheMu.RUnlock()
	if ok {
		return t, nil
	}
	t, err := blank().Clone()
	if err != nil {
		return nil, err
	}
	if t, err = t.Parse(text); err != nil {
		return nil, errors.New(clean(err.Error()))
	}
	if err := rewrite(t); err != nil {
		return nil, err
	}
	cacheMu.Lock()
	if len(cache) < cacheLimit {
		cache[text] = t
	}
	cacheMu.Unlock()
	return t, nil
}

// clean drops the internal template name from text/template's messages:
// "template: field:1:3: executing \"field\" at <.X>: ..." -> "1:3: at <.X>: ...".
func clean(msg string) string {
	msg = strings.TrimPrefix(msg, "template: field:")
	return uncountRoot(strings.Replace(msg, `executing "field" `, "", 1))
}

// funcs are sprig's hermetic text functions (no env, expandenv, clock,
// random numbers or network: a preset must not read the renderer's
// environment, and renders must repeat) without the ones in nonHermetic,
// plus odh-serving's own, all sandboxed.
var funcs = func() template.FuncMap {
	f := sprig.HermeticTxtFuncMap()
	for _, name := range nonHermetic {
		delete(f, name)
	}
	boundFuncs(f)
	f["ChildName"] = naming.ChildName
	f["SafeChildName"] = naming.SafeChildName
	f["fieldOr"] = fieldOr
	f["toYaml"] = toYAML
	f["deref"] = deref
	return sandboxed(f)
}()

// fieldOr reads a dotted path of JSON field names from obj and returns def
// when any step is nil or unset: {{ .Spec | fieldOr "parallelism.data" 1 }}.
func fieldOr(path string, def, obj any) (any, error) {
	v := reflect.ValueOf(obj)
	for _, name := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return def, nil
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Struct:
			f, ok := structField(v, name)
			if !ok {
				return nil, fmt.Errorf("fieldOr %q: %s has no field %q", path, v.Type(), name)
			}
			v = f
		case reflect.Map:
			key := reflect.ValueOf(name)
			if !key.Type().ConvertibleTo(v.Type().Key()) {
				return nil, fmt.Errorf("fieldOr %q: cannot index a %s with %q", path, v.Type(), name)
			}
			v = v.MapIndex(key.Convert(v.Type().Key()))
			if !v.IsValid() {
				return def, nil
			}
		default:
			return nil, fmt.Errorf("fieldOr %q: cannot read %q from a %s", path, name, v.Kind())
		}
	}
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return def, nil
		}
		v = v.Elem()
	}
	if v.IsZero() {
		return def, nil
	}
	return v.Interface(), nil
}

// structField finds a field by JSON name, looking through inlined structs.
func structField(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name || (tag == "" && strings.EqualFold(f.Name, name)) {
			return v.Field(i), true
		}
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			if fv, ok := structField(v.Field(i), name); ok {
				return fv, true
			}
		}
	}
	return reflect.Value{}, false
}

func toYAML(v any) (string, error) {
	out, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// deref follows pointers, so {{ .Spec.Model.Name | deref | squote }} quotes
// the name and not its address: sprig's functions format pointers as
// addresses, although text/template prints what they point to.
func deref(v any) any {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return ""
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return ""
	}
	return rv.Interface()
}

// MaxOutput bounds what one template may write, and maxCount the sequences
// until, untilStep and seq may make: presets are other teams' input, and a
// render must not take the renderer's memory.
const (
	MaxOutput = 1 << 20
	maxCount  = 10000
)

// limitedBuffer fails a write that would take it past limit bytes.
type limitedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, fmt.Errorf("the template writes more than %d bytes", b.limit)
	}
	return b.Buffer.Write(p)
}

// boundFuncs replaces sprig's sequence and repeat functions with versions
// that refuse sizes past the limits.
func boundFuncs(f template.FuncMap) {
	until := f["until"].(func(int) []int)
	untilStep := f["untilStep"].(func(int, int, int) []int)
	seq := f["seq"].(func(...int) string)
	repeat := f["repeat"].(func(int, string) string)
	tooMany := func(fn string, n int) error { return fmt.Errorf("%s: %d items is more than %d", fn, n, maxCount) }
	span := func(start, stop, step int) int {
		if step == 0 {
			return 0
		}
		n := (stop - start) / step
		if n < 0 {
			return 0
		}
		return n
	}
	f["until"] = func(n int) ([]int, error) {
		if n > maxCount || -n > maxCount {
			return nil, tooMany("until", n)
		}
		return until(n), nil
	}
	f["untilStep"] = func(start, stop, step int) ([]int, error) {
		if n := span(start, stop, step); n > maxCount {
			return nil, tooMany("untilStep", n)
		}
		return untilStep(start, stop, step), nil
	}
	f["seq"] = func(params ...int) (string, error) {
		var n int
		switch len(params) {
		case 1:
			n = params[0]
		case 2:
			n = params[1] - params[0]
		case 3:
			n = span(params[0], params[2], params[1])
		}
		if n > maxCount || -n > maxCount {
			return "", tooMany("seq", n)
		}
		return seq(params...), nil
	}
	f["repeat"] = func(count int, str string) (string, error) {
		if count > 0 && len(str) > 0 && count > MaxOutput/len(str) {
			return "", fmt.Errorf("repeat: %d copies of %d bytes is more than %d bytes", count, len(str), MaxOutput)
		}
		return repeat(count, str), nil
	}
}
