// Command crdschemas writes api/crds/serving-schemas.json: the OpenAPI
// schema of every served version of the serving.kserve.io CRDs, without
// descriptions, for api/validation to check objects against offline
// without parsing the CRDs' YAML on every start. `make generate` runs it
// after writing the CRDs, and `make verify` fails when it drifts:
//
//	go run ./hack/crdschemas
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// crds maps each kind to its generated CRD file under api/crds.
var crds = map[string]string{
	"LLMInferenceService":       "serving.kserve.io_llminferenceservices.yaml",
	"LLMInferenceServiceConfig": "serving.kserve.io_llminferenceserviceconfigs.yaml",
}

func main() {
	if err := run(filepath.Join("api", "crds")); err != nil {
		fmt.Fprintln(os.Stderr, "crdschemas:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	out := map[string]map[string]any{}
	for kind, file := range crds {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		var crd struct {
			Spec struct {
				Versions []struct {
					Name   string `json:"name"`
					Served bool   `json:"served"`
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		out[kind] = map[string]any{}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				stripDescriptions(v.Schema.OpenAPIV3Schema)
				out[kind][v.Name] = v.Schema.OpenAPIV3Schema
			}
		}
	}
	js, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "serving-schemas.json"), append(js, '\n'), 0o644)
}

// stripDescriptions removes the description of a schema node and of every
// node below it; a property that is named description stays.
func stripDescriptions(node map[string]any) {
	delete(node, "description")
	if props, ok := node["properties"].(map[string]any); ok {
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				stripDescriptions(m)
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties", "not"} {
		if m, ok := node[key].(map[string]any); ok {
			stripDescriptions(m)
		}
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := node[key].([]any); ok {
			for _, item := range list {
				if m, ok := item.(map[string]any); ok {
					stripDescriptions(m)
				}
			}
		}
	}
}
