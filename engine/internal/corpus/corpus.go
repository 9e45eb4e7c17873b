package corpus

import (
	"fmt"
	"path/filepath"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
)

// Files returns the golden case inputs (engine/testdata/*/input.yaml) and
// the shipped presets (presets/*/preset.yaml) below root, the repository's
// top folder.
func Files(root string) ([]string, error) {
	var files []string
	for _, pattern := range []string{"engine/testdata/*/input.yaml", "presets/*/preset.yaml"} {
		found, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return nil, err
		}
		files = append(files, found...)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no golden inputs below %s", root)
	}
	return files, nil
}

// Specs decodes Files and returns the spec of every service and preset in
// them.
func Specs(root string) ([]*v1alpha2.LLMInferenceServiceSpec, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	var specs []*v1alpha2.LLMInferenceServiceSpec
	for _, file := range files {
		in, err := manifest.DecodeFile(file)
		if err != nil {
			return nil, err
		}
		for _, s := range in.Services {
			specs = append(specs, &s.Service.Spec)
		}
		for _, p := range in.Presets {
			specs = append(specs, p.Spec)
		}
	}
	return specs, nil
}
