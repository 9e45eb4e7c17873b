package presets

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/preset"
)

//go:embed */preset.yaml images.yaml
var files embed.FS

// FS is the embedded preset tree: <name>/preset.yaml.
func FS() fs.FS { return files }

// Load returns the embedded presets in namespace, named prefix+name.
func Load(namespace, prefix string) ([]*preset.Preset, error) {
	return LoadFS(files, namespace, prefix)
}

// Catalog is the built-in presets in namespace with the user's over them: a
// user preset with a built-in's namespace and name replaces it. The
// built-in presets are decoded only when a lookup needs one the user's do
// not have: the chart's stream carries every built-in preset, so a
// post-render of it decodes none.
func Catalog(namespace, prefix string, user []*preset.Preset) (*preset.Catalog, error) {
	return preset.OverlayLazy(namespace, func() ([]*preset.Preset, error) { return Load(namespace, prefix) }, user)
}

// Default is Catalog as `odh-serving render` uses it without flags: in
// engine.DefaultSystemNamespace, named with preset.DefaultPrefix.
func Default(user []*preset.Preset) (*preset.Catalog, error) {
	return Catalog(engine.DefaultSystemNamespace, preset.DefaultPrefix, user)
}

// LoadFS reads <name>/preset.yaml files from fsys.
func LoadFS(fsys fs.FS, namespace, prefix string) ([]*preset.Preset, error) {
	matches, err := fs.Glob(fsys, "*/preset.yaml")
	if err != nil {
		return nil, fmt.Errorf("list presets: %w", err)
	}
	var out []*preset.Preset
	for _, file := range matches {
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("read preset %s: %w", file, err)
		}
		ps, err := manifest.DecodePresets(path.Join("presets", file), data)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			p.Name = prefix + p.Name
			p.Namespace = namespace
			out = append(out, p)
		}
	}
	return out, nil
}

// Images returns the image references the built-in presets name by key,
// from images.yaml.
func Images() (map[string]string, error) {
	data, err := files.ReadFile("images.yaml")
	if err != nil {
		return nil, fmt.Errorf("read presets/images.yaml: %w", err)
	}
	images := map[string]string{}
	if err := yaml.UnmarshalStrict(data, &images); err != nil {
		return nil, fmt.Errorf("presets/images.yaml: %w", err)
	}
	return images, nil
}
