package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// chunk is the text of one document of a stream and the line its content
// starts on.
type chunk struct {
	text []byte
	line int
}

// utf8BOM may start a stream; it is not part of the first document.
var utf8BOM = []byte("\ufeff")

// splitDocuments cuts a YAML stream into its documents, as a YAML parser
// sees them, without parsing them:
//   - a line that starts with "---" followed by a space, a tab or the end
//     of the line starts a document; what follows the marker on that line
//     (a comment, or content such as "--- {a: 1}" or "--- |") belongs to
//     the document: a marker line with content stays in its chunk;
//   - a line that starts with "..." the same way ends one;
//   - a document with no content (blank lines, comments, directives) is
//     dropped, and directives before a "---" stay with the document they
//     introduce;
//   - lines end at LF, CRLF, CR, NEL, LS or PS, as in go.yaml.in/yaml, so
//     line numbers match the decoder's;
//   - a UTF-8 byte order mark at the start is dropped.
//
// Markers count only in column 0, where YAML forbids them inside scalars,
// so no parse is needed to find them, and a chunk holds one document:
// only a document that is a flow collection can end before its chunk
// does, which oneDocument catches. FuzzSplitMatchesYAMLv3 checks the cut
// against a YAML parser.
func splitDocuments(file string, data []byte) ([]chunk, error) {
	if enc := wideEncoding(data); enc != "" {
		return nil, fmt.Errorf("%s:1: the stream is %s; write it as UTF-8", file, enc)
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	var out []chunk
	start := 0         // where the current document's text starts
	content := 0       // the line of its first content; 0 while it has none
	sawMarker := false // it has its own "---" line
	directives := false
	for pos, line := 0, 1; pos < len(data); line++ {
		end, next := lineEnd(data, pos)
		text := data[pos:end]
		switch {
		case isMarker(text, '-'):
			if content > 0 {
				out = append(out, chunk{text: data[start:pos], line: content})
				content, directives = 0, false
			} else if sawMarker {
				directives = false // an empty document ends here, with its directives
			}
			sawMarker = true
			rest := bytes.TrimLeft(text[3:], " \t")
			inline := len(rest) > 0 && rest[0] != '#'
			switch {
			case directives:
				// The directives before it belong to this document.
			case inline:
				start = pos
			default:
				// A bare or commented marker stays out, so the decoder's
				// line numbers count from the document's first line.
				start = next
			}
			if inline {
				content = line
			}
		case isMarker(text, '.'):
			if rest := bytes.TrimLeft(text[3:], " \t"); len(rest) > 0 && rest[0] != '#' {
				return nil, fmt.Errorf("%s:%d: only a comment may follow the document end marker \"...\"", file, line)
			}
			if content > 0 {
				out = append(out, chunk{text: data[start:pos], line: content})
			}
			start, content, sawMarker, directives = next, 0, false, false
		case content > 0 || isBlankOrComment(text):
		case text[0] == '%' && !sawMarker:
			directives = true // it introduces the next document
		default:
			content = line
		}
		pos = next
	}
	if content > 0 {
		out = append(out, chunk{text: data[start:], line: content})
	}
	return out, nil
}

// lineEnd returns where the line starting at pos ends and where the next
// one starts. Line breaks are LF, CRLF, CR, and the Unicode NEL, LS and PS
// that YAML 1.1 parsers also break at.
func lineEnd(data []byte, pos int) (end, next int) {
	for i := pos; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			return i, i + 1
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				return i, i + 2
			}
			return i, i + 1
		case 0xc2, 0xe2:
			if r, size := utf8.DecodeRune(data[i:]); r == '\u0085' || r == '\u2028' || r == '\u2029' {
				return i, i + size
			}
		}
	}
	return len(data), len(data)
}

// isMarker reports whether line is a document marker: three c in column 0
// followed by a space, a tab or nothing.
func isMarker(line []byte, c byte) bool {
	return len(line) >= 3 && line[0] == c && line[1] == c && line[2] == c &&
		(len(line) == 3 || line[3] == ' ' || line[3] == '\t')
}

func isBlankOrComment(line []byte) bool {
	t := bytes.TrimLeft(line, " \t")
	return len(t) == 0 || t[0] == '#'
}

// wideEncoding names the UTF-16 or UTF-32 encoding a byte order mark at the
// start of data announces, or returns "".
func wideEncoding(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0x00, 0x00, 0xfe, 0xff}):
		return "UTF-32 (big-endian)"
	case bytes.HasPrefix(data, []byte{0xff, 0xfe, 0x00, 0x00}):
		return "UTF-32 (little-endian)"
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		return "UTF-16 (big-endian)"
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		return "UTF-16 (little-endian)"
	}
	return ""
}

// oneDocument fails when more than one document hides in a chunk. A YAML
// decoder reads the first document and ignores the rest, and a document
// that is a flow collection ("{...}", such as a JSON object) ends before
// its chunk can: two JSON objects on two lines are one chunk. A block
// mapping cannot end early, so only chunks whose content starts with a
// flow collection, a tag or an anchor are decoded a second time.
func oneDocument(text []byte) error {
	if !startsFlowOrProperty(text) {
		return nil
	}
	dec := yamlv2.NewDecoder(bytes.NewReader(text))
	var first any
	if err := dec.Decode(&first); err != nil {
		return err
	}
	var second any
	err := dec.Decode(&second)
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("%w; separate documents with a \"---\" line", err)
	}
	return errors.New("a second document follows the first without a \"---\" line")
}

// startsFlowOrProperty reports whether the first content of a chunk, after
// comments, directives and a "---" marker, is "{", "[", a tag or an anchor.
func startsFlowOrProperty(text []byte) bool {
	for pos := 0; pos < len(text); {
		end, next := lineEnd(text, pos)
		line := text[pos:end]
		pos = next
		if isMarker(line, '-') {
			line = line[3:]
		}
		t := bytes.TrimLeft(line, " \t")
		if len(t) == 0 || t[0] == '#' || (t[0] == '%' && len(t) == len(line)) {
			continue
		}
		switch t[0] {
		case '{', '[', '!', '&':
			return true
		}
		return false
	}
	return false
}
