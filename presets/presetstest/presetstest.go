package presetstest

import (
	"testing"

	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/presets"
)

// Catalog is presets.Default(user).
func Catalog(tb testing.TB, user []*preset.Preset) *preset.Catalog {
	tb.Helper()
	catalog, err := presets.Default(user)
	if err != nil {
		tb.Fatal(err)
	}
	return catalog
}

// Images is presets.Images().
func Images(tb testing.TB) map[string]string {
	tb.Helper()
	images, err := presets.Images()
	if err != nil {
		tb.Fatal(err)
	}
	return images
}
