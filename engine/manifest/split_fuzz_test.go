package manifest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
)

// FuzzSplitMatchesYAMLv3 cuts random streams into documents and compares
// the cut, document by document, with a YAML parser's (go.yaml.in/yaml/v3
// reading the whole stream). Properties, whenever the parser reads the
// stream:
//   - no document is lost, merged or invented: the cut has as many
//     documents as the parser has non-empty ones;
//   - each piece, parsed alone, is exactly one document, the same tree as
//     the parser's (kinds, tags, styles, values, anchors);
//   - each piece's line is where the parser sees its content start.
//
// And whether or not yaml.v3 reads it: every error starts with file:line,
// and when Split succeeds, yaml.v2 (the decoder Split uses) finds exactly
// one document in each piece, so none hides after a flow collection.
//
// Run it longer with: go test ./engine/manifest -run '^$' -fuzz '^FuzzSplitMatchesYAMLv3$' -fuzztime 2m
func FuzzSplitMatchesYAMLv3(f *testing.F) {
	addSeedStreams(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		texts, lines, err := manifest.SplitText(fuzzFile, data)
		if err != nil {
			if !located.MatchString(err.Error()) {
				t.Fatalf("error %q does not start with %s:<line>", err, fuzzFile)
			}
			return
		}
		if _, err := manifest.Split(fuzzFile, data); err == nil {
			for i, text := range texts {
				if n, err := yamlv2Documents(text); err != nil || n != 1 {
					t.Fatalf("Split read the stream, but yaml.v2 finds %d documents (%v) in piece %d:\n%q", n, err, i, text)
				}
			}
		} else if !located.MatchString(err.Error()) {
			t.Fatalf("error %q does not start with %s:<line>", err, fuzzFile)
		}
		want, err := yamlv3Documents(data)
		if err != nil {
			return // not YAML the reference reads; the decoder judges it
		}
		// A piece whose only content is a tag or an anchor on nothing is
		// an empty document to yaml.v3 as well; Split's decoder reads it
		// as null (skipped) or an empty string (an error), so nothing is
		// lost by leaving it out here.
		var pieces [][]*yamlv3.Node
		var pieceText [][]byte
		var pieceLine []int
		for i, text := range texts {
			got, err := yamlv3Documents(text)
			if err != nil || len(got) > 1 {
				t.Fatalf("piece %d is %d documents (%v), want 1:\n%q", i, len(got), err, text)
			}
			if len(got) == 1 {
				pieces, pieceText, pieceLine = append(pieces, got), append(pieceText, text), append(pieceLine, lines[i])
			}
		}
		if len(pieces) != len(want) {
			t.Fatalf("cut into %d documents, yaml.v3 reads %d:\npieces %q\ndocuments %s", len(pieces), len(want), texts, describe(want))
		}
		for i, got := range pieces {
			if diff := sameTree(got[0], want[i], "$"); diff != "" {
				t.Fatalf("piece %d differs from yaml.v3's document %d at %s:\npiece %q", i, i, diff, pieceText[i])
			}
			if pieceLine[i] != want[i].Line {
				t.Fatalf("piece %d starts on line %d; yaml.v3 sees its content on line %d:\n%q", i, pieceLine[i], want[i].Line, data)
			}
		}
	})
}

// yamlv3Documents returns the root node of every document with content in
// the stream. A document without any (only comments, or nothing between
// two markers) is left out, as Split leaves it out.
func yamlv3Documents(data []byte) ([]*yamlv3.Node, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var out []*yamlv3.Node
	for {
		var doc yamlv3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if root.Kind == yamlv3.ScalarNode && root.Tag == "!!null" && root.Value == "" && root.Anchor == "" && root.Style&yamlv3.TaggedStyle == 0 {
			continue // implicitly empty
		}
		out = append(out, root)
	}
}

// yamlv2Documents counts the documents yaml.v2 reads from text.
func yamlv2Documents(text []byte) (int, error) {
	dec := yamlv2.NewDecoder(bytes.NewReader(text))
	for n := 0; ; n++ {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// sameTree compares two parsed trees, positions and comments aside, and
// describes the first difference.
func sameTree(a, b *yamlv3.Node, path string) string {
	if a.Kind != b.Kind || a.Style != b.Style || a.ShortTag() != b.ShortTag() || a.Value != b.Value || a.Anchor != b.Anchor {
		return fmt.Sprintf("%s: %s, want %s", path, node(a), node(b))
	}
	if len(a.Content) != len(b.Content) {
		return fmt.Sprintf("%s: %d children, want %d", path, len(a.Content), len(b.Content))
	}
	for i := range a.Content {
		if d := sameTree(a.Content[i], b.Content[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
			return d
		}
	}
	return ""
}

func node(n *yamlv3.Node) string {
	return fmt.Sprintf("kind %d style %d tag %s anchor %q value %q", n.Kind, n.Style, n.ShortTag(), n.Anchor, n.Value)
}

func describe(docs []*yamlv3.Node) string {
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = fmt.Sprintf("line %d: %s", d.Line, node(d))
	}
	return strings.Join(parts, "; ")
}
