package build

import (
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Storage volume and container names, as KServe names them.
const (
	StorageInitializer = "storage-initializer"
	provisionVolume    = "kserve-provision-location"
	pvcVolume          = "kserve-pvc-source"
	modelImageVolume   = "kserve-model-image"
)

// DefaultStorageInitializerImage downloads hf:// and s3:// models when
// Options.StorageInitializerImage is empty.
const DefaultStorageInitializerImage = "kserve/storage-initializer:v0.15.2"

// addStorage makes the model at spec.model.uri appear at /mnt/models in the
// main container:
//   - hf:// and s3://: a storage-initializer init container downloads it
//     into an emptyDir;
//   - pvc://claim/path: the claim is mounted read-only with path as subPath;
//   - oci://: the image is mounted as an image volume.
//
// Pods without a main container, or services without a URI, get nothing.
func (b *builder) addStorage(pod *corev1.PodSpec) error {
	uri := b.spec.Model.URI
	if uri == "" {
		return nil
	}
	main := -1
	for i := range pod.Containers {
		if pod.Containers[i].Name == MainContainer {
			main = i
		}
	}
	if main < 0 {
		return nil
	}
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || rest == "" {
		return fmt.Errorf("spec.model.uri %q: want scheme://location with scheme hf, s3, pvc or oci", uri)
	}
	c := &pod.Containers[main]
	switch scheme {
	case "hf", "s3":
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: provisionVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pod.InitContainers = append([]corev1.Container{b.storageInitializer([]string{uri, ModelMountPath}, ModelMountPath)}, pod.InitContainers...)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: provisionVolume, MountPath: ModelMountPath, ReadOnly: true})
	case "pvc":
		claim, sub, _ := strings.Cut(rest, "/")
		if claim == "" {
			return fmt.Errorf("spec.model.uri %q: pvc:// needs a claim name, as pvc://claim/path", uri)
		}
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: pvcVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: pvcVolume, MountPath: ModelMountPath, SubPath: sub, ReadOnly: true})
	case "oci":
		if _, err := url.Parse("oci://" + rest); err != nil {
			return fmt.Errorf("spec.model.uri %q: %w", uri, err)
		}
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: modelImageVolume, VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: rest, PullPolicy: corev1.PullIfNotPresent},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: modelImageVolume, MountPath: ModelMountPath, ReadOnly: true})
	default:
		return fmt.Errorf("spec.model.uri %q: unknown storage scheme %q; supported: hf://, s3://, pvc://, oci://", uri, scheme)
	}
	return nil
}

// storageInitializer downloads each URI in args (pairs of URI and
// destination) into the download volume, mounted read-write at mountPath.
func (b *builder) storageInitializer(args []string, mountPath string) corev1.Container {
	img := b.opts.StorageInitializerImage
	if img == "" {
		img = DefaultStorageInitializerImage
	}
	return corev1.Container{
		Name:         StorageInitializer,
		Image:        img,
		Args:         args,
		VolumeMounts: []corev1.VolumeMount{{Name: provisionVolume, MountPath: mountPath}},
		// The restricted Pod Security level: the download needs no
		// privilege (the image runs as a non-root user).
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr(true),
			AllowPrivilegeEscalation: ptr(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}
