package api

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
)

// servingSchemas is crds/schemas/KIND.VERSION.json: the OpenAPI schema of
// every served version of the serving.kserve.io CRDs, without descriptions,
// one compact file each, which `make generate` writes beside the CRDs
// (hack/crdschemas). They are here, not read from the CRDs' YAML through
// api/crds, because api/crds decodes them with the API server's packages,
// which the render binary must not link, and because parsing the YAML
// takes longer than a whole one-service post-render should. One file per
// version: a post-render of v1alpha2 objects reads only the v1alpha2 ones.
//
//go:embed crds/schemas/*.json
var servingSchemas embed.FS

// ServedSchemas returns the OpenAPI schema (openAPIV3Schema, as JSON,
// descriptions left out) of every served version of a serving.kserve.io
// kind's CRD, by version.
func ServedSchemas(kind string) (map[string]json.RawMessage, error) {
	entries, err := fs.ReadDir(servingSchemas, "crds/schemas")
	if err != nil {
		return nil, fmt.Errorf("read crds/schemas: %w", err)
	}
	versions := map[string]json.RawMessage{}
	for _, e := range entries {
		version, ok := strings.CutPrefix(strings.TrimSuffix(e.Name(), ".json"), kind+".")
		if !ok {
			continue
		}
		raw, err := fs.ReadFile(servingSchemas, "crds/schemas/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read crds/schemas/%s: %w", e.Name(), err)
		}
		versions[version] = raw
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("no CRD for kind %q in serving.kserve.io", kind)
	}
	return versions, nil
}
