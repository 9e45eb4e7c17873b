package chart

import (
	"maps"
	"slices"
	"strings"
	"testing"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// checkDocumented walks values.yaml beside the schema. A key the schema
// lists under properties is one of ours: it needs a comment above it. Keys
// below an object the schema leaves open (resources, listeners, a service's
// spec) are Kubernetes' and not checked. It returns the number of keys
// checked.
func checkDocumented(t *testing.T, values []byte, schema map[string]any) int {
	t.Helper()
	root, err := kyaml.Parse(string(values))
	if err != nil {
		t.Fatal(err)
	}
	return walkDocumented(t, root.YNode(), schema, "")
}

func walkDocumented(t *testing.T, node *kyaml.Node, schema map[string]any, path string) int {
	t.Helper()
	props, _ := schema["properties"].(map[string]any)
	if node.Kind != kyaml.MappingNode || props == nil {
		return 0
	}
	checked := 0
	seen := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, value := node.Content[i], node.Content[i+1]
		name := path + "." + key.Value
		seen[key.Value] = true
		sub, ok := props[key.Value].(map[string]any)
		if !ok {
			t.Errorf("values.yaml: %s is not in values.schema.json", name)
			continue
		}
		checked++
		if strings.TrimSpace(key.HeadComment) == "" {
			t.Errorf("values.yaml: %s has no comment above it", name)
		}
		checked += walkDocumented(t, value, sub, name)
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if !seen[name] {
			t.Errorf("values.schema.json: %s.%s has no default in values.yaml", path, name)
		}
	}
	return checked
}
