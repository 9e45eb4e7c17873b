package cli

import (
	"fmt"
	"maps"

	"github.com/spf13/pflag"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/presets"
)

// Usage of the image flags, which render, post-render and controller share.
const (
	imageFlagUsage = "an image by key, KEY=REF (repeatable): overrides a key of presets/images.yaml " +
		"(vllm, routingSidecar, endpointPicker, inferenceSimulator, storageInitializer) or adds one for team presets"
	imageRegistryFlagUsage = "a registry (host[:port][/path]) that replaces the registry of every image " +
		"presets name by key and of the storage initializer, for clusters that pull through a mirror"
)

// engineFlags are the render options render and post-render share.
type engineFlags struct {
	systemNamespace string
	prefix          string
	phase           string
	certMode        string
	images          map[string]string
	imageRegistry   string
	ingressGateway  string
	internalGateway string
}

func (e *engineFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&e.systemNamespace, "system-namespace", engine.DefaultSystemNamespace, "namespace of the shared presets")
	fs.StringVar(&e.prefix, "preset-prefix", preset.DefaultPrefix, "prefix of the well-known preset names")
	fs.StringVar(&e.phase, "migration-phase", string(build.PhaseV1), "InferencePool migration phase: alpha2, dual, v1 or retired")
	fs.StringVar(&e.certMode, "cert-mode", string(build.CertSelfSigned),
		"where serving certificates come from: self-signed (by the controller), service-ca (OpenShift) or cert-manager (ClusterIssuer odh-serving-ca)")
	fs.StringToStringVar(&e.images, "image", nil, imageFlagUsage)
	fs.StringVar(&e.imageRegistry, "image-registry", "", imageRegistryFlagUsage)
	fs.StringVar(&e.ingressGateway, "ingress-gateway-name", "kserve-ingress-gateway", "the Gateway managed routes attach to, in the system namespace")
	fs.StringVar(&e.internalGateway, "internal-gateway-name", "", "a Gateway for in-cluster callers, in the system namespace; managed routes attach to it too")
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
	if err := engine.CheckImageRegistry(e.imageRegistry); err != nil {
		return engine.Options{}, fmt.Errorf("--image-registry: %w", err)
	}
	images, err := presets.Images()
	if err != nil {
		return engine.Options{}, err
	}
	// Overrides of shipped keys, and new keys for team presets.
	maps.Copy(images, e.images)
	return engine.Options{
		SystemNamespace: e.systemNamespace, PresetPrefix: &e.prefix, Phase: phase, CertMode: certMode, Images: images, ImageRegistry: e.imageRegistry,
		IngressGatewayName: e.ingressGateway, InternalGatewayName: e.internalGateway,
	}, nil
}
