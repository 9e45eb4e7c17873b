package build

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// LoRA paths and names, as KServe has them.
const (
	// LoRAMountRoot holds one directory per adapter. It is beside the model
	// (ModelMountPath), not under it: the model is mounted read-only.
	LoRAMountRoot = "/mnt/lora"
	// loraDownloadRoot is the common parent of the model and the adapters,
	// where the storage-initializer writes when it downloads both.
	loraDownloadRoot = "/mnt"
	loraPVCPrefix    = "lora-pvc-"
	// vllmArgsEnv is the preset's escape hatch for extra vLLM arguments.
	vllmArgsEnv = "VLLM_ADDITIONAL_ARGS"
	loraModules = "--lora-modules"
)

var (
	loraPathUnsafe   = regexp.MustCompile(`[^a-zA-Z0-9._-]`)
	volumeNameUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)
	evalWord         = regexp.MustCompile(`(^|[\s;&|(])eval\s`)
)

// loraAdapter is one entry of spec.model.lora.adapters, checked.
type loraAdapter struct {
	name   string // what clients send as the model
	uri    string
	scheme string // hf, s3 or pvc
	path   string // where the main container finds it
}

// downloaded reports whether the storage-initializer fetches the adapter.
func (a loraAdapter) downloaded() bool { return a.scheme == "hf" || a.scheme == "s3" }

// loraAdapters checks spec.model.lora.adapters and returns them sorted by
// name, so the same adapters in any order give the same pods. Every adapter
// needs a unique name and an hf://, s3:// or pvc:// URI; two names that
// would share a directory under /mnt/lora are refused too.
func loraAdapters(spec *v1alpha2.LLMInferenceServiceSpec) ([]loraAdapter, error) {
	if spec.Model.LoRA == nil {
		return nil, nil
	}
	var out []loraAdapter
	seen := map[string]int{}    // name -> index
	dirs := map[string]string{} // path -> name
	for i, a := range spec.Model.LoRA.Adapters {
		field := fmt.Sprintf("spec.model.lora.adapters[%d]", i)
		name := ""
		if a.Name != nil {
			name = *a.Name
		}
		if name == "" {
			return nil, fmt.Errorf("%s.name: an adapter needs a name; clients send it as the model", field)
		}
		if j, dup := seen[name]; dup {
			return nil, fmt.Errorf("%s.name: adapter %q is already spec.model.lora.adapters[%d]; adapter names must be unique", field, name, j)
		}
		seen[name] = i
		scheme, rest, ok := strings.Cut(a.URI, "://")
		if !ok || rest == "" {
			return nil, fmt.Errorf("%s.uri %q: want scheme://location with scheme hf, s3 or pvc", field, a.URI)
		}
		switch scheme {
		case "hf", "s3":
			if storageInitializerOff(spec) {
				return nil, fmt.Errorf("%s.uri %q: hf:// and s3:// adapters are downloaded by the storage initializer, which spec.storageInitializer.enabled turns off; "+
					"put the adapter on a PVC (pvc://) or turn the storage initializer on", field, a.URI)
			}
		case "pvc":
			if claim, _, _ := strings.Cut(rest, "/"); claim == "" {
				return nil, fmt.Errorf("%s.uri %q: pvc:// needs a claim name, as pvc://claim/path", field, a.URI)
			}
		case "oci":
			return nil, fmt.Errorf("%s.uri %q: oci:// adapters are not supported (a pod runs one model image); put the adapter on a PVC (pvc://) or use hf:// or s3://", field, a.URI)
		default:
			return nil, fmt.Errorf("%s.uri %q: unknown storage scheme %q; supported for adapters: hf://, s3://, pvc://", field, a.URI, scheme)
		}
		dir := path.Join(LoRAMountRoot, loraDir(name))
		if other, clash := dirs[dir]; clash {
			return nil, fmt.Errorf("%s.name: adapters %q and %q would both be mounted at %s; rename one", field, other, name, dir)
		}
		dirs[dir] = name
		out = append(out, loraAdapter{name: name, uri: a.URI, scheme: scheme, path: dir})
	}
	slices.SortFunc(out, func(a, b loraAdapter) int { return cmp.Compare(a.name, b.name) })
	return out, nil
}

// loraDir is the adapter's directory name: its name with every character
// other than letters, digits, '.', '_' and '-' replaced by '-'.
func loraDir(name string) string {
	d := loraPathUnsafe.ReplaceAllString(name, "-")
	if d == "." || d == ".." {
		return "adapter"
	}
	return d
}

// loraVolumeName names the volume of a pvc:// adapter: lora-pvc-<name> as
// KServe names it when that is a valid volume name, and otherwise the name
// made valid (lower case, '-' for anything else) with a hash of the name,
// so adapters such as org/adapter.v1 still get distinct, valid volumes.
func loraVolumeName(name string) string {
	if v := loraPVCPrefix + name; len(validation.IsDNS1123Label(v)) == 0 {
		return v
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:])[:8]
	base := strings.Trim(volumeNameUnsafe.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if max := validation.DNS1123LabelMaxLength - len(loraPVCPrefix) - len(hash) - 1; len(base) > max {
		base = strings.TrimRight(base[:max], "-")
	}
	if base == "" {
		return loraPVCPrefix + hash
	}
	return loraPVCPrefix + base + "-" + hash
}

// addLoRA gives the main container of a serving pod the service's
// adapters: hf:// and s3:// ones are downloaded by the pod's
// storage-initializer beside the model, pvc:// ones are mounted read-only,
// and vLLM is started with --enable-lora and --lora-modules, unless the
// container already passes --lora-modules itself.
func (b *builder) addLoRA(pod *corev1.PodSpec, adapters []loraAdapter) {
	main := containerIndex(pod.Containers, MainContainer)
	if len(adapters) == 0 || main < 0 {
		return
	}
	b.downloadLoRA(pod, main, adapters)
	c := &pod.Containers[main]
	pvc := false
	for _, a := range adapters {
		if a.scheme != "pvc" {
			continue
		}
		pvc = true
		claim, sub, _ := strings.Cut(strings.TrimPrefix(a.uri, "pvc://"), "/")
		vol := loraVolumeName(a.name)
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: a.path, SubPath: sub, ReadOnly: true})
	}
	if pvc {
		// The claims are mounted below the download (or modelcar) volume
		// when that is at /mnt or /mnt/lora; their mount points are made in
		// it when the container starts, which a read-only mount refuses.
		for i := range c.VolumeMounts {
			if m := &c.VolumeMounts[i]; m.Name == provisionVolume && within(LoRAMountRoot, m.MountPath) {
				m.ReadOnly = false
			}
		}
	}
	if passesLoRAModules(c) {
		return
	}
	c.Args = append(b.loraArgs(adapters, evals(c)), c.Args...)
}

// downloadLoRA has the pod's storage-initializer fetch the hf:// and s3://
// adapters: their URI and directory follow the model's as more pairs of
// arguments, and the download volume moves to the common parent of all
// destinations (/mnt), read-write for the download and read-only for vLLM.
// A pod whose model is not downloaded gets a storage-initializer for the
// adapters alone: into the modelcar's volume at /mnt when there is one,
// else into a volume of its own at /mnt/lora.
func (b *builder) downloadLoRA(pod *corev1.PodSpec, main int, adapters []loraAdapter) {
	var pairs []string
	for _, a := range adapters {
		if a.downloaded() {
			pairs = append(pairs, a.uri, a.path)
		}
	}
	if len(pairs) == 0 {
		return
	}
	c := &pod.Containers[main]
	if init := containerIndex(pod.InitContainers, StorageInitializer); init >= 0 {
		pod.InitContainers[init].Args = append(pod.InitContainers[init].Args, pairs...)
		setMountPath(pod.InitContainers[init].VolumeMounts, provisionVolume, loraDownloadRoot)
		setMountPath(c.VolumeMounts, provisionVolume, loraDownloadRoot)
		return
	}
	if slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == provisionVolume }) {
		pod.InitContainers = append([]corev1.Container{b.storageInitializer(pairs, loraDownloadRoot)}, pod.InitContainers...)
		return
	}
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: provisionVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pod.InitContainers = append([]corev1.Container{b.storageInitializer(pairs, LoRAMountRoot)}, pod.InitContainers...)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: provisionVolume, MountPath: LoRAMountRoot, ReadOnly: true})
}

// loraArgs are the vLLM arguments for the adapters: --enable-lora, the
// limits that are set, and --lora-modules with two JSON entries per
// adapter, its name and its publisher name. When the container's script
// evaluates its arguments again (eval, as KServe's presets do), each entry
// is single-quoted so it survives that as one word; otherwise it is passed
// as it is, since the quotes would reach vLLM.
func (b *builder) loraArgs(adapters []loraAdapter, quote bool) []string {
	args := []string{"--enable-lora"}
	if l := b.spec.Model.LoRA; l != nil {
		for _, f := range []struct {
			flag string
			v    *int32
		}{{"--max-lora-rank", l.MaxRank}, {"--max-loras", l.MaxAdapters}, {"--max-cpu-loras", l.MaxCPUAdapters}} {
			if f.v != nil {
				args = append(args, fmt.Sprintf("%s=%d", f.flag, *f.v))
			}
		}
	}
	args = append(args, loraModules)
	for _, a := range adapters {
		for _, name := range []string{a.name, PublisherName(b.svc.Namespace, a.name)} {
			entry, _ := json.Marshal(struct { //nolint:errchkjson // two strings always marshal
				Name string `json:"name"`
				Path string `json:"path"`
			}{name, a.path})
			if quote {
				args = append(args, "'"+string(entry)+"'")
			} else {
				args = append(args, string(entry))
			}
		}
	}
	return args
}

// PublisherName is the name a model or adapter is also served under, and
// that model-based routing matches: publishers/<namespace>/models/<name>.
func PublisherName(namespace, name string) string {
	return "publishers/" + namespace + "/models/" + name
}

// passesLoRAModules reports whether the container already gives vLLM its
// adapters, in its command, its args or VLLM_ADDITIONAL_ARGS.
func passesLoRAModules(c *corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == vllmArgsEnv && strings.Contains(e.Value, loraModules) {
			return true
		}
	}
	return slices.ContainsFunc(c.Command, hasLoRAModules) || slices.ContainsFunc(c.Args, hasLoRAModules)
}

func hasLoRAModules(s string) bool { return strings.Contains(s, loraModules) }

// evals reports whether the container's script runs eval, which splits and
// unquotes the arguments once more.
func evals(c *corev1.Container) bool {
	return slices.ContainsFunc(c.Command, evalWord.MatchString) || slices.ContainsFunc(c.Args, evalWord.MatchString)
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	dir = strings.TrimSuffix(dir, "/")
	return path == dir || strings.HasPrefix(path, dir+"/")
}

func containerIndex(cs []corev1.Container, name string) int {
	return slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
}

func setMountPath(mounts []corev1.VolumeMount, volume, mountPath string) {
	for i := range mounts {
		if mounts[i].Name == volume {
			mounts[i].MountPath = mountPath
		}
	}
}
