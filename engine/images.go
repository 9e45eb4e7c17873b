package engine

import (
	"fmt"
	"strings"

	"github.com/opendatahub-io/odh-serving/engine/build"
)

// StorageInitializerImageKey is the images.yaml key of the image that
// downloads hf:// and s3:// models, used when Options.StorageInitializerImage
// is empty. No preset names it; the engine does.
const StorageInitializerImageKey = "storageInitializer"

// CheckImageRegistry says whether registry can replace the registry of an
// image reference: a host with an optional port and path, such as
// mirror.example.com:5000/llm, without a scheme or a trailing slash.
func CheckImageRegistry(registry string) error {
	switch {
	case registry == "":
		return nil
	case strings.Contains(registry, "://"):
		return fmt.Errorf("image registry %q: give the host (and path) without a scheme", registry)
	case strings.HasSuffix(registry, "/"), strings.HasPrefix(registry, "/"):
		return fmt.Errorf("image registry %q: no leading or trailing slash", registry)
	case strings.ContainsAny(registry, " \t\n@"):
		return fmt.Errorf("image registry %q: spaces and @ are not allowed", registry)
	}
	return nil
}

// MirrorImage moves ref to registry, keeping its repository path, tag and
// digest: ghcr.io/llm-d/sim:v1 becomes <registry>/llm-d/sim:v1, and Docker
// Hub's short names gain their implied path (vllm/vllm-openai:v1 becomes
// <registry>/vllm/vllm-openai:v1, busybox becomes <registry>/library/busybox).
// The first path element is a registry when it holds a dot or a colon or is
// localhost, as in the container runtimes. An empty registry returns ref.
func MirrorImage(ref, registry string) string {
	if registry == "" || ref == "" {
		return ref
	}
	first, rest, found := strings.Cut(ref, "/")
	switch {
	case !found:
		return registry + "/library/" + ref
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return registry + "/" + rest
	default:
		return registry + "/" + ref
	}
}

// resolveImages fills the storage initializer's image from Images (else the
// built-in one) and moves every image to o.ImageRegistry when it is set.
func (o Options) resolveImages() Options {
	if o.StorageInitializerImage == "" {
		o.StorageInitializerImage = o.Images[StorageInitializerImageKey]
	}
	if o.StorageInitializerImage == "" {
		o.StorageInitializerImage = build.DefaultStorageInitializerImage
	}
	if o.ImageRegistry == "" {
		return o
	}
	images := make(map[string]string, len(o.Images))
	for key, ref := range o.Images {
		images[key] = MirrorImage(ref, o.ImageRegistry)
	}
	o.Images = images
	o.StorageInitializerImage = MirrorImage(o.StorageInitializerImage, o.ImageRegistry)
	return o
}
