package chart

import (
	"bufio"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// ciValues lists a chart's ci/*-values.yaml files by their short name
// ("default" for ci/default-values.yaml).
func ciValues(t *testing.T, chart string) map[string]string {
	t.Helper()
	files := golden.Glob(t, filepath.Join(chart, "ci", "*-values.yaml"))
	out := map[string]string{}
	for _, f := range files {
		out[strings.TrimSuffix(filepath.Base(f), "-values.yaml")] = f
	}
	return out
}

// templateArgs are the arguments of `helm template` for a chart, with the
// release name and namespace the tests use.
func templateArgs(chart, valuesFile string, extra ...string) []string {
	name, ns := "odh-serving", "opendatahub"
	if chart == crdsChartDir {
		name, ns = crdsRelease, crdsNamespace
	}
	args := []string{"template", name, chart, "--namespace", ns}
	if valuesFile != "" {
		args = append(args, "-f", valuesFile)
	}
	return append(args, extra...)
}

// render runs `helm template` (once per arguments: template) and splits the
// output into objects of the caller's own.
func render(t *testing.T, args ...string) (string, []*unstructured.Unstructured) {
	t.Helper()
	out := template(t, args...)
	return out, split(t, out)
}

// rendered is one `helm template` run: its output, or the error.
type rendered struct {
	once sync.Once
	out  string
	err  error
}

// renders holds the output of each `helm template` the tests ran, by its
// arguments. Helm renders the same bytes each time (TestDeterministic
// checks that with two runs of its own), so the tests that read what a
// values file renders (the golden files, the dry run, the restricted pods,
// the hooks, the controller's flags) share one run of it rather than each
// start helm again.
var renders sync.Map // of strings.Join(args, "\x00") to *rendered

// template is helm.Must of `helm template` args, run once for all tests.
func template(t *testing.T, args ...string) string {
	t.Helper()
	v, _ := renders.LoadOrStore(strings.Join(args, "\x00"), &rendered{})
	r := v.(*rendered)
	// Not the test's context: the next test reads what this run made.
	r.once.Do(func() { r.out, r.err = helm.Run(context.Background(), args...) })
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.out
}

// split decodes a YAML stream. (engine/manifest.Split is quadratic in the
// length of a document, which the 1.3 MB LWS CRD makes slow.)
func split(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if string(js) == "null" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		objs = append(objs, obj)
	}
}

// find returns the objects of a kind, and with a name when name is not empty.
func find(objs []*unstructured.Unstructured, kind, name string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			out = append(out, o)
		}
	}
	return out
}

// one returns the single object of a kind and name, or fails.
func one(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	found := find(objs, kind, name)
	if len(found) != 1 {
		t.Fatalf("%d %s %s in the output, want 1", len(found), kind, name)
	}
	return found[0]
}

// projectVersion is the VERSION file: the charts' version and appVersion and
// the controller image's default tag.
func projectVersion(t *testing.T) string {
	t.Helper()
	data := golden.Read(t, "../../VERSION")
	return strings.TrimSpace(string(data))
}
