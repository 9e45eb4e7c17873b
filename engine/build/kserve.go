package build

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/api/validation"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// What KServe's fields beyond the model, the workloads and the router add
// to the children: the storage initializer switch, speculative decoding, KV
// cache offloading, tracing and the rollout strategy.

// Names and paths of speculative decoding, as KServe has them; the volume
// name is ours.
const (
	SpeculatorInitializer = "speculator-initializer"
	SpeculatorMountPath   = "/mnt/speculator/model"
	speculatorVolume      = "kserve-speculator"
	speculativeConfig     = "--speculative-config"
	kvTransferConfig      = "--kv-transfer-config"
	trustRemoteCode       = "--trust-remote-code"
)

// The OpenTelemetry variables spec.tracing sets, and KServe's defaults.
const (
	envOTLPEndpoint   = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesSampler  = "OTEL_TRACES_SAMPLER"
	envSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
	envTracesExporter = "OTEL_TRACES_EXPORTER"
	envServiceName    = "OTEL_SERVICE_NAME"
	envResource       = "OTEL_RESOURCE_ATTRIBUTES"
	envResourceNode   = "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME"
	envResourcePod    = "OTEL_RESOURCE_ATTRIBUTES_POD_NAME"

	DefaultTracingEndpoint = "http://otel-collector:4317"
	DefaultTracingSampler  = "parentbased_traceidratio"
	DefaultTracingArg      = "0.05"
	DefaultTracingExporter = "otlp"
	// SchedulerTracingName is the endpoint picker's OTEL_SERVICE_NAME;
	// ServerTracingName, with -decode or -prefill, the model servers'.
	SchedulerTracingName = "inference-scheduler"
	ServerTracingName    = "inference-server"
)

// storageInitializerOff reports whether spec.storageInitializer.enabled is
// false: hf:// and s3:// URIs are then not downloaded.
func storageInitializerOff(spec *v1alpha2.LLMInferenceServiceSpec) bool {
	s := spec.StorageInitializer
	return s != nil && s.Enabled != nil && !*s.Enabled
}

// addSpeculator gives a decode (or single) serving pod the speculator
// model at /mnt/speculator/model and vLLM's --speculative-config, as KServe
// does: hf:// and s3:// are downloaded by a second init container,
// speculator-initializer, into a volume of their own; pvc:// is mounted
// read-only; oci:// gets a second modelcar (or an image volume, as the
// model does with Options.OCIModelSource). The flag goes last among main's arguments, so it wins over one
// in VLLM_ADDITIONAL_ARGS or the service's args, as KServe's replaces
// theirs.
func (b *builder) addSpeculator(pod *corev1.PodSpec) error {
	s := b.spec.Speculator
	main := containerIndex(pod.Containers, MainContainer)
	if s == nil || main < 0 || (len(s.Config) == 0 && s.Model == nil) {
		return nil
	}
	if s.Model != nil {
		uri := s.Model.URI
		scheme, rest, ok := strings.Cut(uri, "://")
		field := "spec.speculator.model.uri"
		switch {
		case !ok || rest == "":
			return fmt.Errorf("%s %q: want scheme://location with scheme hf, s3, pvc or oci", field, uri)
		case scheme == "hf" || scheme == "s3":
			if storageInitializerOff(b.spec) {
				return fmt.Errorf("%s %q: hf:// and s3:// need the storage initializer; set spec.storageInitializer.enabled to true", field, uri)
			}
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: speculatorVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			init := b.storageInitializer([]string{uri, SpeculatorMountPath}, SpeculatorMountPath)
			init.Name = SpeculatorInitializer
			init.VolumeMounts[0].Name = speculatorVolume
			pod.InitContainers = append(pod.InitContainers, init)
		case scheme == "pvc":
			claim, sub, _ := strings.Cut(rest, "/")
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: speculatorVolume, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true},
			}})
			pod.Containers[main].VolumeMounts = append(pod.Containers[main].VolumeMounts,
				corev1.VolumeMount{Name: speculatorVolume, MountPath: SpeculatorMountPath, SubPath: sub, ReadOnly: true})
		case scheme == "oci":
			if b.opts.OCIModelSource == convention.OCIImageVolume {
				pod.Volumes = append(pod.Volumes, corev1.Volume{Name: speculatorVolume, VolumeSource: corev1.VolumeSource{
					Image: &corev1.ImageVolumeSource{Reference: rest, PullPolicy: corev1.PullIfNotPresent},
				}})
				break
			}
			// KServe's second modelcar (index 1): modelcar-1 and
			// modelcar-init-1 link /mnt/speculator/model to the image's
			// /models through a volume at /mnt/speculator.
			addModelcar(pod, main, rest, "-1", SpeculatorMountPath)
		default:
			return fmt.Errorf("%s %q: unknown storage scheme %q; supported: hf://, s3://, pvc://, oci://", field, uri, scheme)
		}
		if scheme == "hf" || scheme == "s3" || (scheme == "oci" && b.opts.OCIModelSource == convention.OCIImageVolume) {
			pod.Containers[main].VolumeMounts = append(pod.Containers[main].VolumeMounts,
				corev1.VolumeMount{Name: speculatorVolume, MountPath: SpeculatorMountPath, ReadOnly: true})
		}
	}
	cfg := map[string]any{}
	for k, v := range s.Config {
		cfg[k] = jsonValue(v)
	}
	if s.Model != nil {
		cfg["model"] = SpeculatorMountPath
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("spec.speculator.config: %w", err)
	}
	appendFlag(&pod.Containers[main], speculativeConfig, string(data))
	return nil
}

// jsonValue is v as the JSON type it reads as: an integer, a number, a
// boolean, else a string, as KServe infers it.
func jsonValue(v string) any {
	if i, err := strconv.ParseInt(v, 10, 64); err == nil {
		return i
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f
	}
	if t, err := strconv.ParseBool(v); err == nil {
		return t
	}
	return v
}

// appendFlag puts flag and its JSON value last among c's arguments,
// single-quoted when the script evaluates them again (see loraArgs).
func appendFlag(c *corev1.Container, flag, value string) {
	if evals(c) {
		value = "'" + strings.ReplaceAll(value, "'", `'\''`) + "'"
	}
	c.Args = append(c.Args, flag, value)
}

// addKVCache gives a serving pod of workload w vLLM's OffloadingConnector
// (--kv-transfer-config, last among main's arguments) and a volume per
// file-system tier, as KServe does: an emptyDir with its size as limit and
// as main's ephemeral-storage request, an ephemeral claim per pod, or an
// existing claim with the path as subPath.
//
// vLLM maps the CPU tier as a file in /dev/shm, so the memory-backed volume
// main mounts there grows by 120% of cpu, as KServe's presets ask
// (kv-cache-shm-percent-of-cpu: "120"), unless the service's own pod
// template (own) gives that volume a sizeLimit: a size the user wrote is
// used as written.
func (b *builder) addKVCache(pod *corev1.PodSpec, w *v1alpha2.WorkloadSpec, own *corev1.PodSpec) error {
	kv := w.KVCacheOffloading
	main := containerIndex(pod.Containers, MainContainer)
	if kv == nil || main < 0 {
		return nil
	}
	c := &pod.Containers[main]
	// The preset's own connector (NIXL between prefill and decode) stays:
	// a second flag would replace it. KVCacheConflicts warns.
	presetConnector := passesFlag(c, kvTransferConfig)
	if v := sharedMemory(pod, main); v != nil && v.EmptyDir.SizeLimit != nil && !presetConnector && !declaresSizeLimit(own, v.Name) {
		size := v.EmptyDir.SizeLimit.DeepCopy()
		size.Add(percentOf(kv.CPU, shmPercentOfCPU))
		v.EmptyDir.SizeLimit = &size
	}
	policy := kv.EvictionPolicy
	if policy == "" {
		policy = "lru" // the CRD's default; render applies it too
	}
	extra := map[string]any{"spec_name": "CPUOffloadingSpec", "cpu_bytes_to_use": kv.CPU.Value(), "eviction_policy": policy}
	var tiers []map[string]any
	for i, t := range kv.Secondary {
		fs := t.FileSystem
		if fs == nil {
			continue
		}
		name, mount := fmt.Sprintf("kv-cache-secondary-%d", i), validation.KVCacheMountPath(fs, i)
		vm := corev1.VolumeMount{Name: name, MountPath: mount}
		var src corev1.VolumeSource
		switch {
		case fs.EmptyDir != nil:
			size := fs.EmptyDir.Size.DeepCopy()
			src.EmptyDir = &corev1.EmptyDirVolumeSource{SizeLimit: &size}
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			req := c.Resources.Requests[corev1.ResourceEphemeralStorage]
			req.Add(size)
			c.Resources.Requests[corev1.ResourceEphemeralStorage] = req
		case fs.PVC != nil && fs.PVC.Spec != nil:
			src.Ephemeral = &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: *fs.PVC.Spec.DeepCopy()}}
		case fs.PVC != nil && fs.PVC.Ref != nil:
			src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fs.PVC.Ref.Name}
			vm.SubPath = fs.PVC.Ref.Path
		default:
			return fmt.Errorf("secondary[%d].fileSystem: set exactly one of emptyDir and pvc", i)
		}
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: name, VolumeSource: src})
		c.VolumeMounts = append(c.VolumeMounts, vm)
		tiers = append(tiers, map[string]any{"type": "fs", "root_dir": mount})
	}
	if len(tiers) > 0 {
		extra["spec_name"] = "TieringOffloadingSpec"
		extra["secondary_tiers"] = tiers
	}
	if presetConnector {
		return nil
	}
	data, err := json.Marshal(map[string]any{"kv_connector": "OffloadingConnector", "kv_role": "kv_both", "kv_connector_extra_config": extra})
	if err != nil {
		return err
	}
	appendFlag(c, kvTransferConfig, string(data))
	return nil
}

// shmPercentOfCPU is how much of kvCacheOffloading.cpu /dev/shm grows by:
// the tier and a fifth again, the value KServe's presets carry.
const shmPercentOfCPU = 120

// sharedMemory is the memory-medium emptyDir the container at index main
// mounts at /dev/shm, or nil.
func sharedMemory(pod *corev1.PodSpec, main int) *corev1.Volume {
	m := slices.IndexFunc(pod.Containers[main].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/dev/shm" })
	if m < 0 {
		return nil
	}
	name := pod.Containers[main].VolumeMounts[m].Name
	v := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	if v < 0 || pod.Volumes[v].EmptyDir == nil || pod.Volumes[v].EmptyDir.Medium != corev1.StorageMediumMemory {
		return nil
	}
	return &pod.Volumes[v]
}

// declaresSizeLimit reports whether the pod template own (the service's
// own, before presets) gives the volume name a sizeLimit.
func declaresSizeLimit(own *corev1.PodSpec, name string) bool {
	if own == nil {
		return false
	}
	return slices.ContainsFunc(own.Volumes, func(v corev1.Volume) bool {
		return v.Name == name && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil
	})
}

// percentOf is percent% of q; q itself when that would overflow.
func percentOf(q resource.Quantity, percent int64) resource.Quantity {
	v := q.Value()
	if v > math.MaxInt64/percent {
		return q
	}
	return *resource.NewQuantity(v*percent/100, q.Format)
}

// ownPod is the service's own pod template (before presets) of the
// workload whose pods have role: its worker, or its template.
func (b *builder) ownPod(worker bool, role string) *corev1.PodSpec {
	w := &b.svc.Spec.WorkloadSpec
	if role == "prefill" {
		w = b.svc.Spec.Prefill
	}
	switch {
	case w == nil:
		return nil
	case worker:
		return w.Worker
	}
	return w.Template
}

// passesFlag reports whether c gives vLLM flag itself: in its command, its
// args or VLLM_ADDITIONAL_ARGS.
func passesFlag(c *corev1.Container, flag string) bool {
	has := func(s string) bool { return strings.Contains(s, flag) }
	for _, e := range c.Env {
		if e.Name == vllmArgsEnv && has(e.Value) {
			return true
		}
	}
	return slices.ContainsFunc(c.Command, has) || slices.ContainsFunc(c.Args, has)
}

// KVCacheConflicts names the workloads whose kvCacheOffloading is not
// passed to vLLM because their main container already sets
// --kv-transfer-config (the prefill/decode presets' NIXL connector): their
// tiers are mounted, and the offloading connector is not configured.
func KVCacheConflicts(spec *v1alpha2.LLMInferenceServiceSpec) []string {
	var out []string
	check := func(w *v1alpha2.WorkloadSpec, path string) {
		if w.KVCacheOffloading == nil {
			return
		}
		for _, pod := range []*corev1.PodSpec{w.Template, w.Worker} {
			if pod == nil {
				continue
			}
			if i := containerIndex(pod.Containers, MainContainer); i >= 0 && passesFlag(&pod.Containers[i], kvTransferConfig) {
				out = append(out, fmt.Sprintf("%s.kvCacheOffloading is not passed to vLLM: the main container already sets %s "+
					"(prefill/decode KV transfer), which one flag cannot combine with offloading; the tiers are mounted (docs/kserve-compat.md)", path, kvTransferConfig))
				return
			}
		}
	}
	check(&spec.WorkloadSpec, "spec")
	if spec.Prefill != nil {
		check(spec.Prefill, "spec.prefill")
	}
	return out
}

// tracing resolves spec.tracing with KServe's defaults (its
// config-llm-tracing preset), then replaces the endpoint picker's values
// with the ones spec.router.scheduler.tracing sets, when forScheduler; nil
// when tracing is off for the component.
func (b *builder) tracing(forScheduler bool) *resolvedTracing {
	t := b.spec.Tracing
	var st *v1alpha2.SchedulerTracingSpec
	if forScheduler && b.spec.Router != nil && b.spec.Router.Scheduler != nil {
		st = b.spec.Router.Scheduler.Tracing
	}
	if t == nil && st == nil {
		return nil
	}
	if t == nil {
		t = &v1alpha2.TracingSpec{}
	}
	r := &resolvedTracing{
		endpoint: or(t.ExporterEndpoint, DefaultTracingEndpoint), exporter: or(t.Exporter, DefaultTracingExporter),
		sampler: or(t.Sampler, DefaultTracingSampler), samplerArg: or(t.SamplerArg, DefaultTracingArg),
		serviceName: SchedulerTracingName,
	}
	if st != nil {
		for _, o := range []struct {
			dst *string
			v   *string
		}{{&r.endpoint, st.OtelExporterEndpoint}, {&r.exporter, st.TracesExporter}, {&r.sampler, st.TracesSampler},
			{&r.samplerArg, st.TracesSamplerArg}, {&r.serviceName, st.ServiceName}} {
			if o.v != nil {
				*o.dst = *o.v
			}
		}
	}
	return r
}

type resolvedTracing struct{ endpoint, exporter, sampler, samplerArg, serviceName string }

// env is the OpenTelemetry environment of a component called name, in
// KServe's order: the service name, the exporter and sampler, then the
// resource attributes (namespace, node, pod and service) from the downward
// API.
func (r *resolvedTracing) env(name, namespace, service string) []corev1.EnvVar {
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	return []corev1.EnvVar{
		{Name: envServiceName, Value: name},
		{Name: envOTLPEndpoint, Value: r.endpoint},
		{Name: envTracesExporter, Value: r.exporter},
		{Name: envTracesSampler, Value: r.sampler},
		{Name: envSamplerArg, Value: r.samplerArg},
		{Name: envResourceNode, ValueFrom: field("spec.nodeName")},
		{Name: envResourcePod, ValueFrom: field("metadata.name")},
		{Name: envResource, Value: "k8s.namespace.name=" + namespace + ",k8s.node.name=$(" + envResourceNode +
			"),k8s.pod.name=$(" + envResourcePod + "),llmisvc.name=" + service},
	}
}

// addServerTracing turns tracing on in a serving pod's main container as
// KServe does: vLLM's --otlp-traces-endpoint and --collect-detailed-traces
// all (unless its args have them) and the environment, with the service
// name inference-server-decode (single and decode pods) or
// inference-server-prefill. An empty endpoint leaves the pod alone.
func (b *builder) addServerTracing(pod *corev1.PodSpec, role string) {
	r := b.tracing(false)
	main := containerIndex(pod.Containers, MainContainer)
	if r == nil || r.endpoint == "" || main < 0 {
		return
	}
	c := &pod.Containers[main]
	if !hasArg(c.Args, "--otlp-traces-endpoint") {
		c.Args = append(c.Args, "--otlp-traces-endpoint", r.endpoint)
	}
	if !hasArg(c.Args, "--collect-detailed-traces") {
		c.Args = append(c.Args, "--collect-detailed-traces", "all")
	}
	suffix := "-decode"
	if role == "prefill" {
		suffix = "-prefill"
	}
	addEnv(c, r.env(ServerTracingName+suffix, b.svc.Namespace, b.svc.Name))
}

// addSchedulerTracing turns tracing on in the endpoint picker's main
// container: --tracing=true (unless its args set --tracing) and the
// environment, named inference-scheduler.
func (b *builder) addSchedulerTracing(pod *corev1.PodSpec) {
	r := b.tracing(true)
	main := containerIndex(pod.Containers, MainContainer)
	if r == nil || main < 0 {
		return
	}
	c := &pod.Containers[main]
	if !hasArg(c.Args, "--tracing") && !hasArg(c.Args, "-tracing") {
		c.Args = append(c.Args, "--tracing=true")
	}
	addEnv(c, r.env(r.serviceName, b.svc.Namespace, b.svc.Name))
}

// addTrustRemoteCode passes vLLM --trust-remote-code when
// spec.trustRemoteCode is true and main does not pass it already.
func (b *builder) addTrustRemoteCode(pod *corev1.PodSpec) {
	main := containerIndex(pod.Containers, MainContainer)
	if !b.spec.TrustRemoteCode || main < 0 || passesFlag(&pod.Containers[main], trustRemoteCode) {
		return
	}
	pod.Containers[main].Args = append(pod.Containers[main].Args, trustRemoteCode)
}

// setSchedulerConfig gives the endpoint picker spec.router.scheduler.config
// .inline as its --config-text, as KServe does, in place of the preset's
// profile; a container that reads --config-file keeps it.
func setSchedulerConfig(s *v1alpha2.SchedulerSpec, pod *corev1.PodSpec) {
	main := containerIndex(pod.Containers, MainContainer)
	if s.Config == nil || s.Config.Inline == nil || len(s.Config.Inline.Raw) == 0 || main < 0 {
		return
	}
	c := &pod.Containers[main]
	text := string(s.Config.Inline.Raw)
	for i, a := range c.Args {
		switch {
		case a == "--config-text" && i+1 < len(c.Args):
			c.Args[i+1] = text
			return
		case strings.HasPrefix(a, "--config-text="):
			c.Args[i] = "--config-text=" + text
			return
		}
	}
	if hasArg(c.Args, "--config-file") || hasArg(c.Args, "-config-file") {
		return
	}
	c.Args = append(c.Args, "--config-text", text)
}

// writableParents makes a read-only mount of main read-write when another
// mount lies below it (a speculator, modelcar or KV cache tier under the
// model's volume at /mnt): the runtime makes that mount point in the parent
// when the container starts, which a read-only mount refuses.
func writableParents(pod *corev1.PodSpec) {
	main := containerIndex(pod.Containers, MainContainer)
	if main < 0 {
		return
	}
	mounts := pod.Containers[main].VolumeMounts
	for i := range mounts {
		if !mounts[i].ReadOnly {
			continue
		}
		for j := range mounts {
			if i != j && mounts[j].MountPath != mounts[i].MountPath && within(mounts[j].MountPath, mounts[i].MountPath) {
				mounts[i].ReadOnly = false
				break
			}
		}
	}
}

// hasArg reports whether args hold flag, as "flag" or "flag=value".
func hasArg(args []string, flag string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
}

func or(p *string, def string) string {
	if p != nil {
		return *p
	}
	return def
}

// addEnv sets each variable on c that c does not set already: what the pod
// template says wins.
func addEnv(c *corev1.Container, env []corev1.EnvVar) {
	for _, e := range env {
		if !hasEnv(c, e.Name) {
			c.Env = append(c.Env, e)
		}
	}
}

// deploymentStrategy is the rolling update spec.rolloutStrategy asks for;
// the zero strategy (Kubernetes' default) without one.
func deploymentStrategy(r *v1alpha2.RolloutStrategy) appsv1.DeploymentStrategy {
	if r == nil {
		return appsv1.DeploymentStrategy{}
	}
	return appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: r.MaxUnavailable, MaxSurge: r.MaxSurge},
	}
}

// lwsRollout replaces the LeaderWorkerSet's rolling update bounds with the
// ones spec.rolloutStrategy sets.
func lwsRollout(r *v1alpha2.RolloutStrategy, unavailable, surge *intstr.IntOrString) {
	if r == nil {
		return
	}
	if r.MaxUnavailable != nil {
		*unavailable = *r.MaxUnavailable
	}
	if r.MaxSurge != nil {
		*surge = *r.MaxSurge
	}
}

// schedulerPodMeta adds spec.router.scheduler's labels and annotations to
// the endpoint picker pod's; its own labels win.
func schedulerPodMeta(s *v1alpha2.SchedulerSpec, labels map[string]string) (map[string]string, map[string]string) {
	out := maps.Clone(s.Labels)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, labels)
	var ann map[string]string
	if len(s.Annotations) > 0 {
		ann = maps.Clone(s.Annotations)
	}
	return out, ann
}
