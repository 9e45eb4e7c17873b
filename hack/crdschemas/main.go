// Command crdschemas writes api/crds/schemas/KIND.VERSION.json: the OpenAPI
// schema of every served version of the serving.kserve.io CRDs, without
// descriptions, one compact JSON file each, for api/validation to check
// objects against offline without parsing the CRDs' YAML on every start
// (and, one file per version, without reading the versions it does not
// need), and the same schemas as Go values in
// api/validation/zz_generated.schemas.go, so that the check does not
// decode them at all. `make generate` runs it after writing the CRDs, and
// `make verify` fails when either drifts:
//
//	go run ./hack/crdschemas
//
// With -slim it instead rewrites the CRD files it is given without their
// schemas' descriptions. hack/chart-sync.sh slims the chart's copies of the
// Gateway API and LeaderWorkerSet CRDs: Helm keeps a release, with every file
// of its chart, in one Secret of at most 1 MiB, and with their descriptions
// those two sets alone fill it (LWS's pod templates are 1.3 MB of YAML).
// Validation is unchanged; only `kubectl explain` has less to say.
//
//	go run ./hack/crdschemas -slim FILE...
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
	if len(os.Args) > 1 && os.Args[1] == "-slim" {
		for _, file := range os.Args[2:] {
			if err := slim(file); err != nil {
				fmt.Fprintln(os.Stderr, "crdschemas -slim:", err)
				os.Exit(1)
			}
		}
		return
	}
	if err := run(filepath.Join("api", "crds")); err != nil {
		fmt.Fprintln(os.Stderr, "crdschemas:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	out := filepath.Join(dir, "schemas")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	schemas := map[string][]byte{}
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
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			stripDescriptions(v.Schema.OpenAPIV3Schema)
			js, err := json.Marshal(v.Schema.OpenAPIV3Schema)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(out, kind+"."+v.Name+".json"), append(js, '\n'), 0o644); err != nil {
				return err
			}
			schemas[kind+"/"+v.Name] = js
		}
	}
	return writeGo(filepath.Join("api", "validation", "zz_generated.schemas.go"), schemas)
}

// slim rewrites the CRD in file without the descriptions of its versions'
// schemas.
func slim(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return fmt.Errorf("%s: not a CustomResourceDefinition with spec.versions", file)
	}
	for _, v := range versions {
		schema, _ := v.(map[string]any)["schema"].(map[string]any)
		if root, ok := schema["openAPIV3Schema"].(map[string]any); ok {
			stripDescriptions(root)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return os.WriteFile(file, append([]byte("---\n"), out...), 0o644)
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
