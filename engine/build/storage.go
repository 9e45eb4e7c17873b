package build

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Storage volume and container names, as KServe names them.
const (
	StorageInitializer = "storage-initializer"
	provisionVolume    = "kserve-provision-location"
	pvcVolume          = "kserve-pvc-source"
	modelImageVolume   = "kserve-model-image"
	// Modelcar runs the model image beside main; ModelcarInit runs it
	// first, so the image is pulled and checked before vLLM starts.
	Modelcar     = "modelcar"
	ModelcarInit = "modelcar-init"
	// modelcarRoot is where a modelcar image holds the model; main and the
	// modelcar share the volume the link to it lives in at the link's
	// parent (/mnt for /mnt/models).
	modelcarRoot = "/models"
	// envModelInitMode tells the runtime the model may appear after it
	// starts; KServe sets it to "async" for a modelcar.
	envModelInitMode = "MODEL_INIT_MODE"
)

// A modelcar's requests and limits, KServe's defaults: the container only
// holds a link and sleeps.
var (
	modelcarCPU    = resource.MustParse("10m")
	modelcarMemory = resource.MustParse("15Mi")
)

// DefaultStorageInitializerImage downloads hf:// and s3:// models when
// Options.StorageInitializerImage is empty.
const DefaultStorageInitializerImage = "kserve/storage-initializer:v0.15.2"

// addStorage makes the model at spec.model.uri appear at /mnt/models in the
// main container:
//   - hf:// and s3://: a storage-initializer init container downloads it
//     into an emptyDir;
//   - pvc://claim/path: the claim is mounted read-only with path as subPath;
//   - oci://: a modelcar (the default) or an image volume, after
//     Options.OCIModelSource.
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
		if storageInitializerOff(b.spec) {
			// spec.storageInitializer.enabled: false. The model reaches
			// /mnt/models some other way: an init container or volume of
			// the user's own, as with KServe.
			return nil
		}
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
		if b.opts.OCIModelSource == convention.OCIImageVolume {
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: modelImageVolume, VolumeSource: corev1.VolumeSource{
				Image: &corev1.ImageVolumeSource{Reference: rest, PullPolicy: corev1.PullIfNotPresent},
			}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: modelImageVolume, MountPath: ModelMountPath, ReadOnly: true})
			return nil
		}
		addModelcar(pod, main, rest, "", ModelMountPath)
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
		SecurityContext: restricted(nil),
	}
}

// restricted is a container security context that meets the restricted
// Pod Security level, running as user when it is set.
func restricted(user *int64) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr(true),
		RunAsUser:                user,
		AllowPrivilegeEscalation: ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// addModelcar serves the model image image as KServe's modelcar does:
//   - the pod shares its process namespace, so main can reach the
//     modelcar's file system through /proc/<pid>/root;
//   - the modelcar container (the model image, running sh) links
//     /proc/<its pid>/root/models to /mnt/models in an emptyDir it shares
//     with main at /mnt, then sleeps;
//   - the modelcar-init init container (the same image) checks that
//     /models exists and is not empty, so the image is pulled and a bad
//     one fails before vLLM starts;
//   - main gets MODEL_INIT_MODE=async, as the link may appear after it
//     starts, and the volume read-only (KServe mounts it read-write; main
//     only reads the model).
//
// Unlike KServe's, both containers meet the restricted Pod Security level
// and run as main's user when main names one: /proc/<pid>/root is open
// only to the same user. The image must therefore run as a non-root user
// and hold sh.
//
// suffix tells a second modelcar (KServe's "-1", the speculator's) from the
// model's: it ends its containers' and volume's names. link is where the
// model appears; the volume is mounted at its parent.
func addModelcar(pod *corev1.PodSpec, main int, image, suffix, link string) {
	c := &pod.Containers[main]
	volume, mount := provisionVolume+suffix, path.Dir(link)
	var user *int64
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		user = ptr(*c.SecurityContext.RunAsUser)
	}
	if !hasEnv(c, envModelInitMode) {
		c.Env = append(c.Env, corev1.EnvVar{Name: envModelInitMode, Value: "async"})
	}
	pod.ShareProcessNamespace = ptr(true)
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: mount, ReadOnly: true})
	resources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: modelcarCPU, corev1.ResourceMemory: modelcarMemory},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: modelcarCPU, corev1.ResourceMemory: modelcarMemory},
	}
	pod.Containers = append(pod.Containers, corev1.Container{
		Name:  Modelcar + suffix,
		Image: image,
		// $$ is a literal $ to Kubernetes, so the shell sees $$: its pid.
		Args:                     []string{"sh", "-c", fmt.Sprintf("ln -sf /proc/$$$$/root%s %s && sleep infinity", modelcarRoot, link)},
		VolumeMounts:             []corev1.VolumeMount{{Name: volume, MountPath: mount}},
		Resources:                resources,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restricted(user),
	})
	pod.InitContainers = append(pod.InitContainers, corev1.Container{
		Name:  ModelcarInit + suffix,
		Image: image,
		Args: []string{"sh", "-c", fmt.Sprintf("echo 'Pre-fetching modelcar %[1]s: ' && [ -d %[2]s ] && [ \"$$(ls -A %[2]s)\" ] && "+
			"echo 'OK ... Prefetched and valid (%[2]s exists)' || "+
			"(echo 'NOK ... Prefetched but modelcar is invalid (%[2]s does not exist or is empty)' && exit 1)", image, modelcarRoot)},
		Resources:                resources,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restricted(user),
	})
}
