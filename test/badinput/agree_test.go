package badinput

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// webhookDenied starts the API server's message when the webhook, not the
// CRD's schema, refused an object.
const webhookDenied = `admission webhook "validate.llmisvc.serving.kserve.io" denied the request`

// agreeCase is one service sent through the three judges.
type agreeCase struct {
	name string
	// file holds the input; render reads it.
	file string
	objs []*unstructured.Unstructured
	// refuse says whether the in-cluster path (the webhook and the API
	// server) must refuse it; render must refuse it either way, since a
	// case the cluster admits (accepted[webhook]) fails at render time.
	refuse bool
	// field, when set, is the path every judge's error must name: the
	// bound the case breaks.
	field string
}

// TestRenderWebhookAndAPIServerAgree sends every service case, and one
// case per bound the CRD schemas state (minimum, maximum, enum, pattern,
// length, item count, required), through the three judges of a service:
//   - render (`odh-serving render -f`, in process);
//   - the validating webhook's handler, in process;
//   - the real API server: a server-side dry run, where the CRD's schema
//     judges first and the webhook after.
//
// They must refuse the same inputs. Where the API server's own schema
// refuses, render and the webhook must refuse too and name the same field,
// with render naming file:line. A case the cluster admits on purpose
// (accepted[webhook]: known only when the service renders) must pass both
// the webhook and the API server and fail render. The bound cases are
// generated from the CRDs, so a bound added to the API types is covered
// without a new case.
func TestRenderWebhookAndAPIServerAgree(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, namespacePrefix)
	var cases []agreeCase
	for _, c := range loadCases(t) {
		if c.category != "services" {
			continue
		}
		if _, skip := c.skipped[entryWebhook]; skip {
			continue
		}
		objs := servingObjects(t, c)
		_, admitted := c.accepted[entryWebhook]
		cases = append(cases, agreeCase{name: c.name, file: c.file, objs: objs, refuse: !admitted})
	}
	bounds := boundCases(t, ns)
	if len(bounds) < 4 {
		t.Fatalf("only %d bounds found in the CRD schemas", len(bounds))
	}
	cases = append(cases, bounds...)
	byCRD := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, renderErr := runCLI([]string{"render", "-f", c.file}, nil)
			if code == 0 {
				t.Fatalf("render accepted it")
			}
			// The webhook sees what the API server passes on: the objects as
			// the dry run returns them (pruned, defaulted), or as written
			// when the API server refused them.
			apiErr, admitted := apiServerVerdict(t, c.objs, ns)
			hookErr := webhookVerdict(t, admitted, ns)
			if !c.refuse {
				if hookErr != "" || apiErr != "" {
					t.Fatalf("the case says the cluster admits it, but the webhook said %q and the API server %q", hookErr, apiErr)
				}
				return
			}
			metadata := apiErr != "" && onlyMetadata(apiErr)
			if metadata && hookErr == "" {
				// The API server's own checks of metadata (a name is
				// required, a DNS subdomain); the webhook never sees it.
				hookErr = "(not sent: metadata refused)"
			}
			if hookErr == "" || apiErr == "" {
				t.Fatalf("render refused it:\n%s\nbut the webhook said %q and the API server %q", renderErr, hookErr, apiErr)
			}
			if strings.Contains(apiErr, webhookDenied) {
				return // the webhook's rules, which render shares; TestWebhook and TestRender check the words
			}
			byCRD++
			fields := c.field
			if fields == "" {
				fields = strings.Join(causeFields(apiErr), " ")
			}
			for f := range strings.FieldsSeq(fields) {
				if !strings.Contains(renderErr, f) || (!metadata && !strings.Contains(hookErr, f)) {
					t.Errorf("the API server names %s; render and the webhook must too:\nAPI server: %s\nrender: %s\nwebhook: %s", f, apiErr, renderErr, hookErr)
				}
			}
			if !regexp.MustCompile(regexp.QuoteMeta(filepath.Base(c.file)) + `:\d+: `).MatchString(renderErr) {
				t.Errorf("render's error does not name the file and line:\n%s", renderErr)
			}
		})
	}
	t.Logf("%d cases, %d of them bounds from the CRD schemas; the API server itself (schema, metadata) refused %d, render and the webhook with it", len(cases), len(bounds), byCRD)
}

// webhookVerdict sends each object to the webhook's handler as the API
// server would on create, and returns the first refusal, or "".
func webhookVerdict(t *testing.T, objs []*unstructured.Unstructured, ns string) string {
	t.Helper()
	for _, o := range objs {
		raw, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		gvk := o.GroupVersionKind()
		resp := webhook.Validator{}.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create,
			Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
			Name:      o.GetName(), Namespace: ns,
			Object: runtime.RawExtension{Raw: raw},
		}})
		if !resp.Allowed {
			if resp.Result == nil {
				return "refused without a message"
			}
			return resp.Result.Message
		}
	}
	return ""
}

// apiServerVerdict creates each object as a server-side dry run in ns and
// returns the first refusal, or "", and the objects as the API server
// returned them (those it refused as they were written).
func apiServerVerdict(t *testing.T, objs []*unstructured.Unstructured, ns string) (string, []*unstructured.Unstructured) {
	t.Helper()
	var out []*unstructured.Unstructured
	refusal := ""
	for _, o := range objs {
		o = o.DeepCopy()
		o.SetNamespace(ns)
		if err := cp.Client.Create(t.Context(), o, client.DryRunAll); err != nil {
			if refusal == "" {
				refusal = err.Error() + causes(err)
			}
		}
		out = append(out, o)
	}
	return refusal, out
}

// onlyMetadata reports whether every field an API error names is under
// metadata.
func onlyMetadata(msg string) bool {
	fields := causeFields(msg)
	for _, f := range fields {
		if !strings.HasPrefix(f, "metadata.") {
			return false
		}
	}
	return len(fields) > 0
}

// causes lists an API error's field causes, one per line, so causeFields
// finds them.
func causes(err error) string {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range status.Status().Details.Causes {
		if c.Field != "" {
			b.WriteString("\ncause: " + c.Field)
		}
	}
	return b.String()
}

var causeRE = regexp.MustCompile(`(?m)^cause: (\S+)$`)

// causeFields returns the field paths of the causes causes appended.
func causeFields(msg string) []string {
	var out []string
	for _, m := range causeRE.FindAllStringSubmatch(msg, -1) {
		// <nil> is the note that CEL rules were skipped.
		if m[1] != "<nil>" && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// boundCases makes, for every served version of LLMInferenceService, one
// service per bound its CRD's schema states under spec, each breaking that
// bound in an otherwise valid service (the base service is checked to
// render).
func boundCases(t *testing.T, ns string) []agreeCase {
	t.Helper()
	versions, err := api.ServedSchemas("LLMInferenceService")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out []agreeCase
	for _, version := range slices.Sorted(maps.Keys(versions)) {
		var schema map[string]any
		if err := json.Unmarshal(versions[version], &schema); err != nil {
			t.Fatal(err)
		}
		props, _ := schema["properties"].(map[string]any)
		specSchema, _ := props["spec"].(map[string]any)
		base := func() map[string]any {
			return map[string]any{
				"apiVersion": v1alpha2.GroupVersion.Group + "/" + version, "kind": "LLMInferenceService",
				"metadata": map[string]any{"name": "bound", "namespace": ns},
				"spec":     map[string]any{"model": map[string]any{"uri": "hf://example/model"}},
			}
		}
		// The base is valid to all three: a broken bound is what each case
		// adds.
		checkRenders(t, dir, base())
		if refusal, admitted := apiServerVerdict(t, []*unstructured.Unstructured{{Object: base()}}, ns); refusal != "" || webhookVerdict(t, admitted, ns) != "" {
			t.Fatalf("the base service of the bound cases is refused in the cluster: %s", refusal)
		}
		for _, b := range bounds(specSchema, []step{{name: "spec"}}) {
			obj := base()
			setAt(obj, b.path, b.value)
			name := fmt.Sprintf("schema/%s/%s/%s", version, pathString(b.path), b.bound)
			file := filepath.Join(dir, strings.NewReplacer("/", "_", "[", "_", "]", "_").Replace(name)+".yaml")
			writeYAML(t, file, obj)
			u := &unstructured.Unstructured{Object: obj}
			field := pathString(b.path)
			if b.bound == "required" {
				field = "" // each missing field is named; the API server's causes say which
			}
			out = append(out, agreeCase{name: name, file: file, objs: []*unstructured.Unstructured{u}, refuse: true, field: field})
		}
	}
	return out
}

// checkRenders fails unless render admits obj.
func checkRenders(t *testing.T, dir string, obj map[string]any) {
	t.Helper()
	file := filepath.Join(dir, "base.yaml")
	writeYAML(t, file, obj)
	if code, _, stderr := runCLI([]string{"render", "-f", file}, nil); code != 0 {
		t.Fatalf("the base service of the bound cases does not render: %s", stderr)
	}
}

func writeYAML(t *testing.T, file string, obj map[string]any) {
	t.Helper()
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// step is one step of a path into an object: a property, or the first
// item of a list, or a key of a map.
type step struct {
	name  string
	index bool
	key   bool
}

// bound is a value at a path that breaks one bound of the schema.
type bound struct {
	path  []step
	bound string
	value any
}

// bounds walks a schema node and returns a breaking value for each bound
// on it and below it.
func bounds(s map[string]any, path []step) []bound {
	var out []bound
	at := func(name string, v any) { out = append(out, bound{path: slices.Clone(path), bound: name, value: v}) }
	typ, _ := s["type"].(string)
	if m, ok := s["minimum"].(float64); ok {
		if b, _ := s["exclusiveMinimum"].(bool); !b {
			m--
		}
		at("minimum", number(typ, m))
	}
	if m, ok := s["maximum"].(float64); ok {
		if b, _ := s["exclusiveMaximum"].(bool); !b {
			m++
		}
		at("maximum", number(typ, m))
	}
	if enum, ok := s["enum"].([]any); ok && typ == "string" {
		at("enum", "not-one-of-"+fmt.Sprint(len(enum)))
	}
	if p, ok := s["pattern"].(string); ok {
		if re, err := regexp.Compile(p); err == nil {
			for _, v := range []string{"!", "A B", "-", "", strings.Repeat("z", 300)} {
				if !re.MatchString(v) {
					at("pattern", v)
					break
				}
			}
		}
	}
	if n, ok := s["minLength"].(float64); ok && n >= 1 {
		at("minLength", "")
	}
	if n, ok := s["maxLength"].(float64); ok {
		at("maxLength", strings.Repeat("a", int(n)+1))
	}
	if n, ok := s["minItems"].(float64); ok && n >= 1 {
		at("minItems", []any{})
	}
	if req, ok := s["required"].([]any); ok && len(req) > 0 && typ == "object" {
		at("required", map[string]any{})
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(props)) {
			child, _ := props[name].(map[string]any)
			out = append(out, bounds(child, append(slices.Clone(path), step{name: name}))...)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		out = append(out, bounds(items, append(slices.Clone(path), step{index: true}))...)
	}
	if extra, ok := s["additionalProperties"].(map[string]any); ok {
		out = append(out, bounds(extra, append(slices.Clone(path), step{name: "k", key: true}))...)
	}
	return out
}

func number(typ string, v float64) any {
	if typ == "integer" {
		return int64(v)
	}
	return v
}

// setAt puts v at path in obj, making the maps and one-item lists on the
// way.
func setAt(obj map[string]any, path []step, v any) {
	var cur any = obj
	for i, s := range path {
		last := i == len(path)-1
		switch {
		case s.index:
			list := cur.([]any)
			if last {
				list[0] = v
				return
			}
			if _, ok := list[0].(map[string]any); !ok {
				list[0] = map[string]any{}
			}
			cur = list[0]
		default:
			m := cur.(map[string]any)
			if last {
				m[s.name] = v
				return
			}
			next, ok := m[s.name]
			if !ok {
				if path[i+1].index {
					next = []any{nil}
				} else {
					next = map[string]any{}
				}
				m[s.name] = next
			}
			cur = next
		}
	}
}

func pathString(path []step) string {
	var b strings.Builder
	for i, s := range path {
		switch {
		case s.index:
			b.WriteString("[0]")
		case s.key:
			b.WriteString("[" + s.name + "]")
		default:
			if i > 0 {
				b.WriteString(".")
			}
			b.WriteString(s.name)
		}
	}
	return b.String()
}
