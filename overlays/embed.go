// Package overlays embeds the kustomize overlays odh-serving ships, one
// folder each: <name>/kustomization.yaml and the files it names under
// patches/ and resources/, so `odh-serving post-render --overlay NAME`
// needs no files on disk. Each folder also holds a README.md and the
// expected.yaml its test checks, which are not part of the overlay.
package overlays

import (
	"embed"
	"io/fs"
)

//go:embed */kustomization.yaml */patches */resources
var files embed.FS

// FS is the embedded overlay tree: <name>/kustomization.yaml,
// <name>/patches/ and <name>/resources/.
func FS() fs.FS { return files }
