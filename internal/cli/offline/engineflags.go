package offline

import (
	"maps"

	"github.com/spf13/pflag"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/presets"
)

// engineFlags are the engine options of render and post-render: the flag
// set engine.Options registers, and --migration-phase.
type engineFlags struct {
	opts engine.Options
}

func (e *engineFlags) register(fs *pflag.FlagSet) {
	e.opts.AddFlags(fs)
	e.opts.AddPhaseFlag(fs)
	e.opts.AddPlatformFlags(fs)
}

// options returns the engine options the flags give, with the --image
// overrides (and new keys for team presets) over the built-in images.
func (e *engineFlags) options() (engine.Options, error) {
	opts := e.opts.Defaults()
	if err := opts.Validate(); err != nil {
		return engine.Options{}, err
	}
	images, err := presets.Images()
	if err != nil {
		return engine.Options{}, err
	}
	maps.Copy(images, e.opts.Images)
	opts.Images = images
	return opts, nil
}
