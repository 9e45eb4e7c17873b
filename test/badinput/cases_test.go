package badinput

import (
	"bufio"
	"bytes"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// Entry points.
const (
	entryRender      = "render"
	entryPostRender  = "post-render"
	entryLint        = "lint"
	entryWebhook     = "webhook"
	entryHelmInstall = "helm-install"
)

// entries are the entry points that can see each category of input.
var entries = map[string][]string{
	"services": {entryRender, entryPostRender, entryWebhook},
	"presets":  {entryLint, entryWebhook},
	"streams":  {entryPostRender, entryRender},
	"values":   {entryHelmInstall},
}

// minCases is how many cases testdata/ must hold, besides the engine's.
const minCases = 60

// badCase is one bad input.
type badCase struct {
	// name is category/file without .yaml.
	name     string
	file     string
	category string
	data     []byte
	// want is the error substring per entry point.
	want map[string]string
	// accepted and skipped map an entry point to the reason it lets the
	// input through or cannot be given it.
	accepted map[string]string
	skipped  map[string]string
}

// wants reports whether entry must reject the case, and with what.
func (c *badCase) wants(entry string) (string, bool) {
	if !slices.Contains(entries[c.category], entry) {
		return "", false
	}
	if _, ok := c.accepted[entry]; ok {
		return "", false
	}
	if _, ok := c.skipped[entry]; ok {
		return "", false
	}
	return c.want[entry], true
}

var header = regexp.MustCompile(`^# (error|accepted|skip)(?:\[([a-z-]+)\])?: (.+)$`)

// loadCases reads testdata/<category>/*.yaml and, as services, the engine's
// bad inputs.
func loadCases(t *testing.T) []*badCase {
	t.Helper()
	var cases []*badCase
	for _, category := range slices.Sorted(maps.Keys(entries)) {
		files := golden.Glob(t, filepath.Join("testdata", category, "*.yaml"))
		for _, f := range files {
			cases = append(cases, loadCase(t, category, category, f))
		}
	}
	if len(cases) < minCases {
		t.Fatalf("testdata holds %d bad inputs; keep at least %d", len(cases), minCases)
	}
	engine := golden.Glob(t, "../../engine/testdata/bad/*.yaml")
	for _, f := range engine {
		cases = append(cases, loadCase(t, "engine", "services", f))
	}
	return cases
}

func loadCase(t *testing.T, prefix, category, file string) *badCase {
	t.Helper()
	data := golden.Read(t, file)
	c := &badCase{
		name:     prefix + "/" + strings.TrimSuffix(filepath.Base(file), ".yaml"),
		file:     file,
		category: category,
		data:     data,
		want:     map[string]string{},
		accepted: map[string]string{},
		skipped:  map[string]string{},
	}
	var def string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		m := header.FindStringSubmatch(sc.Text())
		if m == nil {
			break
		}
		kind, entry, text := m[1], m[2], m[3]
		if entry != "" && !slices.Contains(entries[category], entry) {
			t.Fatalf("%s: %s[%s]: %s inputs do not reach %s", file, kind, entry, category, entry)
		}
		switch {
		case kind == "error" && entry == "":
			def = text
		case kind == "error":
			c.want[entry] = text
		case kind == "accepted" && entry != "":
			c.accepted[entry] = text
		case kind == "skip" && entry != "":
			c.skipped[entry] = text
		default:
			t.Fatalf("%s: %q needs an entry point", file, sc.Text())
		}
	}
	if def == "" {
		t.Fatalf("%s must start with '# error: <expected message>'", file)
	}
	for _, e := range entries[category] {
		if c.want[e] == "" {
			c.want[e] = def
		}
	}
	return c
}

// TestCorpus checks the corpus itself: enough cases, and every entry point
// of a category sees some case fail.
func TestCorpus(t *testing.T) {
	cases := loadCases(t)
	seen := map[string]int{}
	for _, c := range cases {
		for _, e := range entries[c.category] {
			if _, ok := c.wants(e); ok {
				seen[c.category+" "+e]++
			}
		}
	}
	for _, category := range slices.Sorted(maps.Keys(entries)) {
		for _, e := range entries[category] {
			if seen[category+" "+e] == 0 {
				t.Errorf("no %s case fails in %s", category, e)
			}
		}
	}
	t.Logf("%d cases; rejections per entry point: %v", len(cases), seen)
}
