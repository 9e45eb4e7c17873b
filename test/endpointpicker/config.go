package endpointpicker

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// GIEAPIVersion is the apiVersion of the EndpointPickerConfig that GIE's
// endpoint picker v1.3.1 to v1.5.0 accepts (and llm-d-router still reads,
// as deprecated).
const GIEAPIVersion = "inference.networking.x-k8s.io/v1alpha1"

// Adapted is a rendered endpoint picker configuration made loadable by GIE's
// endpoint picker.
type Adapted struct {
	// Config is the configuration to give GIE's endpoint picker: the rendered
	// one with GIE's apiVersion and without Dropped.
	Config string
	// Dropped are the names of the plugins taken out (a plugin's name is its
	// type unless the configuration names it), in the rendered order.
	Dropped []string
	// Unrunnable says, one reason a line, why what is left is not the
	// scheduling the service asked for; empty when GIE's endpoint picker can
	// run it. When it is not empty, start no endpoint picker.
	Unrunnable []string
	// Diff is the change, line by line, from the rendered configuration
	// (re-indented as Config is) to Config: "-" lines removed, "+" added,
	// two spaces before a kept line.
	Diff string
}

// Runnable says whether GIE's endpoint picker can run the configuration.
func (a *Adapted) Runnable() bool { return len(a.Unrunnable) == 0 }

// gieProfileHandlers are GIE's profile handler types: a configuration needs
// one, and GIE's single-profile-handler runs only one profile.
var gieProfileHandlers = []string{"single-profile-handler"}

// Adapt turns the configuration our presets render for llm-d-router's
// endpoint picker (the text of --config-text or of the --config-file) into
// one GIE's endpoint picker loads. It sets GIE's apiVersion and drops each
// plugin whose type GIE does not register but llm-d-router does, from the
// plugin list and from every scheduling profile; it changes nothing else.
// A plugin type neither registers is an error. What is dropped makes the
// configuration unrunnable when it is a profile handler (and with it the
// deciders it names), a filter (the profile would pick pods it must not),
// the heaviest scorer of a profile, or everything a profile had.
func Adapt(rendered string) (*Adapted, error) {
	llmd, err := LLMDRouterPlugins()
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(rendered), &doc); err != nil {
		return nil, fmt.Errorf("endpoint picker config: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("endpoint picker config: not a YAML mapping")
	}
	root := doc.Content[0]
	before, err := encode(&doc)
	if err != nil {
		return nil, err
	}
	if kind := scalar(root, "kind"); kind != "EndpointPickerConfig" {
		return nil, fmt.Errorf("endpoint picker config: kind %q, want EndpointPickerConfig", kind)
	}
	av := value(root, "apiVersion")
	if av == nil || av.Kind != yaml.ScalarNode {
		return nil, errors.New("endpoint picker config: no apiVersion")
	}
	av.Value = GIEAPIVersion

	out := &Adapted{}
	types := map[string]string{}   // every plugin's name -> its type
	dropped := map[string]string{} // the dropped ones
	if plugins := value(root, "plugins"); plugins != nil {
		if plugins.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("endpoint picker config: plugins (line %d) is not a list", plugins.Line)
		}
		var kept []*yaml.Node
		for _, p := range plugins.Content {
			typ := scalar(p, "type")
			name := scalar(p, "name")
			if name == "" {
				name = typ
			}
			types[name] = typ
			switch {
			case typ == "":
				return nil, fmt.Errorf("endpoint picker config: the plugin at line %d has no type", p.Line)
			case slices.Contains(GIEPluginTypes, typ):
				kept = append(kept, p)
				continue
			case !llmd.Has(typ):
				return nil, fmt.Errorf("endpoint picker config: plugin %s (line %d): type %q is registered neither by GIE %s nor by %s at %.7s",
					name, p.Line, typ, GIEVersion, llmd.Repository, llmd.Commit)
			}
			dropped[name] = typ
			out.Dropped = append(out.Dropped, name)
			if isKind(typ, "-handler") {
				out.Unrunnable = append(out.Unrunnable, fmt.Sprintf("plugin %s: the profile handler %s is llm-d-router's; GIE's endpoint picker has only %s",
					name, typ, strings.Join(gieProfileHandlers, ", ")))
			}
		}
		plugins.Content = kept
	}

	if profiles := value(root, "schedulingProfiles"); profiles != nil {
		if profiles.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("endpoint picker config: schedulingProfiles (line %d) is not a list", profiles.Line)
		}
		for _, prof := range profiles.Content {
			reasons, err := dropFromProfile(prof, types, dropped)
			if err != nil {
				return nil, err
			}
			out.Unrunnable = append(out.Unrunnable, reasons...)
		}
	}

	after, err := encode(&doc)
	if err != nil {
		return nil, err
	}
	out.Config = after
	out.Diff = lineDiff(before, after)
	return out, nil
}

// dropFromProfile takes the dropped plugins out of one scheduling profile and
// says what that costs it.
func dropFromProfile(prof *yaml.Node, types, dropped map[string]string) ([]string, error) {
	name := scalar(prof, "name")
	refs := value(prof, "plugins")
	if refs == nil {
		return nil, nil
	}
	if refs.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("endpoint picker config: profile %s: plugins (line %d) is not a list", name, refs.Line)
	}
	var kept []*yaml.Node
	var reasons []string
	heaviestKept, heaviestDropped := 0, 0
	heaviestDroppedName := ""
	for _, r := range refs.Content {
		ref := scalar(r, "pluginRef")
		weight := 1
		if w := scalar(r, "weight"); w != "" {
			n, err := strconv.Atoi(w)
			if err != nil {
				return nil, fmt.Errorf("endpoint picker config: profile %s: plugin %s: weight %q (line %d) is not a whole number", name, ref, w, r.Line)
			}
			weight = n
		}
		typ, gone := dropped[ref]
		if !gone {
			kept = append(kept, r)
			if isKind(types[ref], "-scorer") && weight > heaviestKept {
				heaviestKept = weight
			}
			continue
		}
		switch {
		case isKind(typ, "-filter"):
			reasons = append(reasons, fmt.Sprintf("profile %s: the filter %s is llm-d-router's; without it the profile would pick pods it must not", name, ref))
		case isKind(typ, "-scorer") && weight > heaviestDropped:
			heaviestDropped, heaviestDroppedName = weight, ref
		}
	}
	emptied := len(kept) == 0 && len(refs.Content) > 0
	refs.Content = kept
	switch {
	case emptied:
		reasons = append(reasons, fmt.Sprintf("profile %s: nothing is left that GIE's endpoint picker runs", name))
	case heaviestDroppedName != "" && heaviestDropped >= heaviestKept:
		reasons = append(reasons, fmt.Sprintf("profile %s: its heaviest scorer %s (weight %d) is llm-d-router's; the profile would score by something else",
			name, heaviestDroppedName, heaviestDropped))
	}
	return reasons, nil
}

// isKind says whether a plugin type is of a kind (its suffix: -filter,
// -scorer, -handler, -picker, -decider), as every type named in our presets
// is.
func isKind(typ, suffix string) bool { return strings.HasSuffix(typ, suffix) }

// value is the value of key in a mapping node, or nil.
func value(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalar is the text of key's scalar value in a mapping node, or "".
func scalar(m *yaml.Node, key string) string {
	if v := value(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

func encode(doc *yaml.Node) (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("endpoint picker config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("endpoint picker config: %w", err)
	}
	return b.String(), nil
}

// lineDiff is the whole of b with a's lines that b lacks ("-") and b's lines
// that a lacks ("+"), by longest common subsequence.
func lineDiff(a, b string) string {
	x := strings.Split(strings.TrimSuffix(a, "\n"), "\n")
	y := strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	// lcs[i][j] is the length of the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + x[i] + "\n")
			i++
		default:
			out.WriteString("+ " + y[j] + "\n")
			j++
		}
	}
	return out.String()
}
