package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"

	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// assertSameAsYAMLv2 fails unless the fast writer gives yaml.v2's bytes,
// and reports whether it handled obj itself.
func assertSameAsYAMLv2(t *testing.T, where string, obj map[string]any) (fast bool) {
	t.Helper()
	want, err := yamlv2.Marshal(obj)
	if err != nil {
		t.Fatalf("%s: yaml.v2: %v", where, err)
	}
	w := yamlWriter{}
	err = w.document(obj)
	if errors.Is(err, errFallback) {
		return false
	}
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if !bytes.Equal(w.buf, want) {
		t.Errorf("%s: the fast writer differs from yaml.v2\nwant:\n%s\ngot:\n%s", where, want, w.buf)
	}
	return true
}

// TestWriterMatchesYAMLv2 writes every document of the repository's
// expected outputs and examples both ways.
func TestWriterMatchesYAMLv2(t *testing.T) {
	var files []string
	for _, pattern := range []string{
		"../testdata/*/*.yaml", "../../presets/*/*.yaml", "../../examples/*.yaml", "../../examples/*/*.yaml",
		"../../internal/cli/testdata/*.yaml", "../../test/integration/testdata/kserve/*.yaml",
	} {
		m := golden.Glob(t, pattern)
		files = append(files, m...)
	}
	docs, fast := 0, 0
	for _, f := range files {
		data := golden.Read(t, f)
		split, err := Split(f, data)
		if err != nil {
			continue // not a stream of objects (e.g. images.yaml)
		}
		for _, d := range split {
			docs++
			if assertSameAsYAMLv2(t, d.Where(), d.Object.Object) {
				fast++
			}
		}
	}
	t.Logf("the fast writer handled %d of %d documents", fast, docs)
	if docs < 100 || fast < docs*9/10 {
		t.Errorf("the fast writer handled %d of %d documents; want at least 100 documents and 90%% of them", fast, docs)
	}
}

// TestWriterMatchesYAMLv2OnRandomValues writes random trees of the values
// unstructured objects hold, with strings built from the characters that
// change a scalar's style, its quoting and where long lines break.
func TestWriterMatchesYAMLv2OnRandomValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fast := 0
	const n = 20000
	for i := range n {
		obj := randomMap(r, 0)
		if assertSameAsYAMLv2(t, fmt.Sprintf("random tree %d", i), obj) {
			fast++
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("the fast writer handled %d of %d random trees", fast, n)
	if fast < n/2 {
		t.Errorf("the fast writer handled %d of %d random trees; the test must exercise it", fast, n)
	}
}

var pieces = []string{
	"a", "b", "Z", "x1", "10", "2", "0", "007", " ", " ", "  ", "\n", "\n\n", ":", ": ", "#", " #", "-", "- ", "--",
	"---", "...", "?", "'", "\"", "\\", "[", "{", ",", "|", ">", "*", "&", "!", "%", "@", "`", "~", ".", "+",
	"y", "no", "true", "Null", "on", "1e3", "0x1F", "0b101", "1_000", "2001-12-14", "1:20", ".inf", "-.5", "<<",
	"vllm", "--port=8000", "app.kubernetes.io/name", "é", "\t", "\r",
}

func randomString(r *rand.Rand) string {
	var b strings.Builder
	parts := r.IntN(6)
	if r.IntN(8) == 0 {
		parts = 20 + r.IntN(60) // long: past the 80th column
	}
	for range parts {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(12); {
	case k < 5 || depth > 4:
		return randomString(r)
	case k == 5:
		return int64(r.IntN(2000) - 1000)
	case k == 6:
		return []float64{0.5, -1e21, 3, math.Inf(1), 1e-7}[r.IntN(5)] //nolint:gosec // IntN(5) indexes the five
	case k == 7:
		return []any{nil, true, false}[r.IntN(3)] //nolint:gosec // IntN(3) indexes the three
	case k < 10:
		return randomMap(r, depth+1)
	default:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomValue(r, depth+1)
		}
		return l
	}
}

func randomMap(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range r.IntN(5) {
		key := randomString(r)
		if r.IntN(3) > 0 {
			key = []string{"apiVersion", "kind", "a2", "a10", "a02", "B", "b", "_x", "1", "10", "9"}[r.IntN(11)]
		}
		m[key] = randomValue(r, depth)
	}
	return m
}

// BenchmarkWriteYAML writes the children of the prefill/decode golden case
// with yaml.v2 and with the writer that replaced it (same bytes).
func BenchmarkWriteYAML(b *testing.B) {
	data := golden.Read(b, "../testdata/prefill-decode/expected.yaml")
	docs, err := Split("expected.yaml", data)
	if err != nil {
		b.Fatal(err)
	}
	yamlV2 := func(m map[string]any) ([]byte, error) { return yamlv2.Marshal(m) }
	for name, encode := range map[string]func(map[string]any) ([]byte, error){"yaml.v2": yamlV2, "writer": encodeYAML} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, d := range docs {
					if _, err := encode(d.Object.Object); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkWriteYAMLParallel writes the objects of a rendered service (the
// prefill/decode golden case) from every core at once, as encodeAll and
// concurrent renders do: what is shared between encoders (the cache of
// yaml.v2's answers for strings that may read as numbers) shows here.
func BenchmarkWriteYAMLParallel(b *testing.B) {
	data := golden.Read(b, "../testdata/prefill-decode/expected.yaml")
	docs, err := Split("expected.yaml", data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for _, d := range docs {
				if _, err := encodeYAML(d.Object.Object); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
}
