package manifest

import (
	"fmt"
	"strings"
	"testing"
)

// cm is a ConfigMap document named name.
func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

// TestSplit covers the stream shapes a user or Helm writes: each case lists
// the objects Split must return as "line name" (item path after the name
// for an object of a List), or the error it must fail with.
func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{name: "plain", in: cm("a") + "---\n" + cm("b"), want: []string{"1 a", "6 b"}},
		{
			// The lost-document bug: the separator carries a comment.
			name: "comment after the separator", in: cm("a") + "--- # the second one\n" + cm("b"),
			want: []string{"1 a", "6 b"},
		},
		{name: "comment after the first separator", in: "--- # source: chart/templates/a.yaml\n" + cm("a"), want: []string{"2 a"}},
		{name: "tab after the separator", in: cm("a") + "---\t# tab\n" + cm("b"), want: []string{"1 a", "6 b"}},
		{
			name: "content on the separator line", in: cm("a") + "--- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n",
			want: []string{"1 a", "5 b"},
		},
		{name: "a name that starts with dashes is no separator", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: |\n    ---\n", want: []string{"1 x"}},
		{name: "CRLF", in: strings.ReplaceAll(cm("a")+"--- # c\n"+cm("b"), "\n", "\r\n"), want: []string{"1 a", "6 b"}},
		{name: "CR alone", in: strings.ReplaceAll(cm("a")+"---\n"+cm("b"), "\n", "\r"), want: []string{"1 a", "6 b"}},
		{name: "document end markers", in: cm("a") + "...\n" + cm("b") + "... # end\n---\n" + cm("c") + "...\n", want: []string{"1 a", "6 b", "12 c"}},
		{name: "a directive before the separator", in: cm("a") + "...\n%YAML 1.1\n---\n" + cm("b"), want: []string{"1 a", "8 b"}},
		{name: "content after a document end marker", in: cm("a") + "... kind: x\n", err: "x.yaml:5: only a comment may follow"},
		{name: "byte order mark", in: "\ufeff" + cm("a") + "---\n" + cm("b"), want: []string{"1 a", "6 b"}},
		{name: "byte order mark before a separator", in: "\ufeff--- # c\n" + cm("a"), want: []string{"2 a"}},
		{name: "UTF-16", in: "\xff\xfea\x00:\x00", err: "x.yaml:1: the stream is UTF-16 (little-endian); write it as UTF-8"},
		{
			name: "empty documents", in: "---\n---\n# only a comment\n---\n\n---\nnull\n---\n~\n--- # c\n" + cm("a") + "---\n---\n",
			want: []string{"11 a"},
		},
		{name: "nothing", in: "", want: nil},
		{name: "JSON", in: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, want: []string{"1 a"}},
		{
			name: "JSON documents over several lines", in: "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {\"name\": \"a\"}\n}\n---\n" +
				"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\"}}\n",
			want: []string{"1 a", "7 b"},
		},
		{
			name: "JSON objects without a separator", in: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}` + "\n" +
				`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`,
			err: "x.yaml:1: yaml: line 1: did not find expected <document start>; separate documents with a \"---\" line",
		},
		{
			name: "flow mappings without a separator", in: "--- !!map {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n{b: 1}\n",
			err: "x.yaml:1: yaml: line 1: did not find expected <document start>",
		},
		{
			name: "List", in: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n" +
				"- apiVersion: v1\n  kind: Secret\n  metadata: {name: b}\n---\n" + cm("c"),
			want: []string{"1 a items[0]", "1 b items[1]", "11 c"},
		},
		{
			name: "a List of Lists", in: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"List","items":[` +
				`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}]}`,
			want: []string{"1 a items[0].items[0]"},
		},
		{name: "an empty List", in: "apiVersion: v1\nkind: List\nitems: []\n---\n" + cm("a"), want: []string{"5 a"}},
		{name: "a List item without kind", in: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n", err: "x.yaml:1: items[0]: Object 'Kind' is missing"},
		{
			name: "a kind with items that is no List", in: "apiVersion: example.com/v1\nkind: Basket\nmetadata: {name: a}\nitems: [1, 2]\n",
			want: []string{"1 a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Split("x.yaml", []byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want one starting with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range docs {
				s := fmt.Sprintf("%d %s", d.Line, d.Object.GetName())
				if d.Item != "" {
					s += " " + d.Item
				}
				got = append(got, s)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDecodeErrorsNameTheListItem: a service in a List fails with the
// file, the List's line and the item.
func TestDecodeErrorsNameTheListItem(t *testing.T) {
	in := "# a List\napiVersion: v1\nkind: List\nitems:\n- apiVersion: serving.kserve.io/v1alpha2\n  kind: LLMInferenceService\n" +
		"  metadata: {name: a}\n  spec: {replicas: x}\n"
	_, err := Decode("x.yaml", []byte(in))
	const want = "x.yaml:2: items[0]: LLMInferenceService a: spec.replicas: Invalid value"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want one starting with %q", err, want)
	}
}
