package manifest_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// fuzzFile is the file name the fuzzed streams are read as.
const fuzzFile = "fuzz.yaml"

// located is how every decode error must start: the file and the line of
// the document that failed.
var located = regexp.MustCompile(`^fuzz\.yaml:\d+: `)

// FuzzDecodeStream decodes random YAML streams, seeded with every golden
// input, bad input, shipped preset and example. Properties:
//   - no panic;
//   - deterministic: the same stream decodes to the same objects or errors;
//   - every error starts with file:line;
//   - what decodes, WriteYAML writes back to a stream that splits into the
//     same objects.
//
// Run it longer with: go test ./engine/manifest -run '^$' -fuzz '^FuzzDecodeStream$' -fuzztime 2m
func FuzzDecodeStream(f *testing.F) {
	addSeedStreams(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		first, firstErr := manifest.Decode(fuzzFile, data)
		second, secondErr := manifest.Decode(fuzzFile, data)
		if errText(firstErr) != errText(secondErr) {
			t.Fatalf("two decodes fail differently:\n%v\n%v", firstErr, secondErr)
		}
		if firstErr != nil {
			for _, e := range golden.Leaves(firstErr) {
				if !located.MatchString(e.Error()) {
					t.Fatalf("error %q does not start with %s:<line>", e, fuzzFile)
				}
			}
			return
		}
		a, b := docsJSON(t, first.Docs), docsJSON(t, second.Docs)
		if a != b {
			t.Fatalf("two decodes differ:\n%s\n%s", a, b)
		}
		objs := make([]*unstructured.Unstructured, len(first.Docs))
		for i, d := range first.Docs {
			objs[i] = d.Object
		}
		var out bytes.Buffer
		if err := manifest.WriteYAML(&out, objs); err != nil {
			t.Fatalf("write what was read: %v", err)
		}
		again, err := manifest.Split("written.yaml", out.Bytes())
		if err != nil {
			t.Fatalf("read what was written: %v\n%s", err, out.Bytes())
		}
		if c := docsJSON(t, again); c != a {
			t.Fatalf("a write and read changed the objects:\nread    %s\nwritten %s", a, c)
		}
	})
}

// addSeedStreams adds every golden input, bad input, shipped preset and
// example to the corpus, and streams of the shapes that once went wrong.
func addSeedStreams(f *testing.F) {
	f.Helper()
	var files []string
	for _, pattern := range []string{
		"../testdata/*/input.yaml", "../testdata/bad/*.yaml",
		"../../presets/*/preset.yaml", "../../presets/*/sample.yaml", "../../examples/*.yaml",
	} {
		found := golden.Glob(f, pattern)
		files = append(files, found...)
	}
	if len(files) < 50 {
		f.Fatalf("only %d seed files", len(files))
	}
	for _, file := range files {
		data := golden.Read(f, file)
		f.Add(data)
	}
	for _, s := range []string{
		"---\n---\n# only comments\n---\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\napiVersion: v1\nkind: List\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {\"k\": \"\\t\\u00e9\"}\n---\napiVersion: v1\nkind: ConfigMap\n",
		"apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nmetadata: {name: a}\nspec: {replicas: 1, replicas: 2}\n",
		"\tapiVersion: v1\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},\"data\":{\"k\":\"dg==\"}}",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n--- # comment\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
		"\ufeff%YAML 1.1\n--- !!map\r\napiVersion: v1\r\nkind: List\r\nitems: []\r\n...\r\n--- |\r\n  text\r\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}]}\n{\"a\": 1}\n",
		"a: 1\r...\r--- >\r b\r---\r~\r",
	} {
		f.Add([]byte(s))
	}
}

func docsJSON(t *testing.T, docs []manifest.Document) string {
	t.Helper()
	objs := make([]map[string]any, len(docs))
	for i, d := range docs {
		objs[i] = d.Object.Object
	}
	data, err := json.Marshal(objs)
	if err != nil {
		t.Fatalf("encode the decoded objects: %v", err)
	}
	return string(data)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
