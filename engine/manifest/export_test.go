package manifest

// SplitText is splitDocuments for the external tests: each document's text
// and the line its content starts on.
func SplitText(file string, data []byte) (texts [][]byte, lines []int, err error) {
	chunks, err := splitDocuments(file, data)
	for _, c := range chunks {
		texts = append(texts, c.text)
		lines = append(lines, c.line)
	}
	return texts, lines, err
}
