package api

import (
	_ "embed" // the schemas below
	"encoding/json"
	"fmt"
	"sync"
)

// servingSchemas is crds/serving-schemas.json: the OpenAPI schema of every
// served version of the serving.kserve.io CRDs, without descriptions,
// which `make generate` writes beside the CRDs (hack/crdschemas). It is
// here, not read from the CRDs' YAML through api/crds, because api/crds
// decodes them with the API server's packages, which the render binary
// must not link, and because parsing the YAML takes longer than a whole
// one-service post-render should.
//
//go:embed crds/serving-schemas.json
var servingSchemas []byte

var schemasByKind = sync.OnceValues(func() (map[string]map[string]json.RawMessage, error) {
	var out map[string]map[string]json.RawMessage
	if err := json.Unmarshal(servingSchemas, &out); err != nil {
		return nil, fmt.Errorf("read crds/serving-schemas.json: %w", err)
	}
	return out, nil
})

// ServedSchemas returns the OpenAPI schema (openAPIV3Schema, as JSON,
// descriptions left out) of every served version of a serving.kserve.io
// kind's CRD, by version.
func ServedSchemas(kind string) (map[string]json.RawMessage, error) {
	all, err := schemasByKind()
	if err != nil {
		return nil, err
	}
	versions, ok := all[kind]
	if !ok {
		return nil, fmt.Errorf("no CRD for kind %q in serving.kserve.io", kind)
	}
	return versions, nil
}
