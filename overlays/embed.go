// Package overlays embeds the kustomize overlays odh-serving ships, one
// folder each (<name>/kustomization.yaml and the files it names), so
// `odh-serving post-render --overlay NAME` needs no files on disk. Each
// folder also holds a README.md and the expected.yaml its test checks; the
// latter is not part of the overlay.
package overlays

import (
	"embed"
	"io/fs"
)

// ExpectedFile is the test's expected output in each overlay folder.
const ExpectedFile = "expected.yaml"

//go:embed */*.yaml
var files embed.FS

// FS is the embedded overlay tree: <name>/kustomization.yaml and the
// other YAML files beside it.
func FS() fs.FS { return files }
