package cli

import (
	"github.com/spf13/pflag"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/preset"
)

// engineFlags are the render options render and post-render share.
type engineFlags struct {
	systemNamespace string
	prefix          string
	phase           string
	certMode        string
}

func (e *engineFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&e.systemNamespace, "system-namespace", engine.DefaultSystemNamespace, "namespace of the shared presets")
	fs.StringVar(&e.prefix, "preset-prefix", preset.DefaultPrefix, "prefix of the well-known preset names")
	fs.StringVar(&e.phase, "migration-phase", string(build.PhaseV1), "InferencePool migration phase: alpha2, dual, v1 or retired")
	fs.StringVar(&e.certMode, "cert-mode", string(build.CertSelfSigned),
		"where serving certificates come from: self-signed (by the controller), service-ca (OpenShift) or cert-manager (ClusterIssuer odh-serving-ca)")
}

// options checks the flags and returns the engine options they give.
func (e *engineFlags) options() (engine.Options, error) {
	phase, err := build.ParsePhase(e.phase)
	if err != nil {
		return engine.Options{}, err
	}
	certMode, err := build.ParseCertMode(e.certMode)
	if err != nil {
		return engine.Options{}, err
	}
	return engine.Options{SystemNamespace: e.systemNamespace, PresetPrefix: &e.prefix, Phase: phase, CertMode: certMode}, nil
}
