package presetlint

import (
	"context"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/presets"
)

// Sample is a service shape presets are tried against.
type Sample struct {
	Name string
	Spec v1alpha2.LLMInferenceServiceSpec
}

func ptr[T any](v T) *T { return &v }

func managedRouter() *v1alpha2.RouterSpec {
	return &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}, Scheduler: &v1alpha2.SchedulerSpec{}}
}

func dp(data, local int32) *v1alpha2.ParallelismSpec {
	return &v1alpha2.ParallelismSpec{Data: &data, DataLocal: &local}
}

// Samples are the topologies presets are tried against.
var Samples = []Sample{
	{Name: "single-node", Spec: v1alpha2.LLMInferenceServiceSpec{Router: managedRouter()}},
	{Name: "prefill-decode", Spec: v1alpha2.LLMInferenceServiceSpec{Prefill: &v1alpha2.WorkloadSpec{Replicas: ptr[int32](2)}, Router: managedRouter()}},
	{Name: "data-parallel", Spec: v1alpha2.LLMInferenceServiceSpec{
		WorkloadSpec: v1alpha2.WorkloadSpec{Parallelism: dp(4, 2), Worker: &corev1.PodSpec{}}, Router: managedRouter(),
	}},
	{Name: "pipeline-parallel", Spec: v1alpha2.LLMInferenceServiceSpec{
		WorkloadSpec: v1alpha2.WorkloadSpec{Parallelism: &v1alpha2.ParallelismSpec{Pipeline: ptr[int32](2)}, Worker: &corev1.PodSpec{}}, Router: managedRouter(),
	}},
	{Name: "prefill-decode-pipeline-parallel", Spec: v1alpha2.LLMInferenceServiceSpec{
		WorkloadSpec: v1alpha2.WorkloadSpec{Parallelism: &v1alpha2.ParallelismSpec{Pipeline: ptr[int32](2)}, Worker: &corev1.PodSpec{}},
		Prefill:      &v1alpha2.WorkloadSpec{Parallelism: &v1alpha2.ParallelismSpec{Pipeline: ptr[int32](2)}, Worker: &corev1.PodSpec{}},
		Router:       managedRouter(),
	}},
	{Name: "prefill-decode-data-parallel", Spec: v1alpha2.LLMInferenceServiceSpec{
		WorkloadSpec: v1alpha2.WorkloadSpec{Parallelism: dp(4, 2), Worker: &corev1.PodSpec{}},
		Prefill:      &v1alpha2.WorkloadSpec{Parallelism: dp(2, 2), Worker: &corev1.PodSpec{}},
		Router:       managedRouter(),
	}},
}

// Linter checks presets against samples with a catalog of built-in presets.
type Linter struct {
	// Builtin are the presets a service sees besides the linted one.
	Builtin []*preset.Preset
	// Options are the render options (images, system namespace, prefix).
	Options engine.Options
	// Validator checks rendered custom resources against their CRDs.
	Validator *crds.Validator
}

// New is a Linter with the shipped presets' images (presets.Images) unless
// opts names images, whose Validator knows the CRDs of every custom
// resource a preset can render: GIE, Gateway API, LWS, cert-manager and
// KEDA.
func New(builtin []*preset.Preset, opts engine.Options) (*Linter, error) {
	if opts.Images == nil {
		images, err := presets.Images()
		if err != nil {
			return nil, err
		}
		opts.Images = images
	}
	v, err := crds.LoadValidator(crds.GIE, crds.GatewayAPI, crds.LWS, crds.CertManager, crds.KEDA)
	if err != nil {
		return nil, err
	}
	return &Linter{Builtin: builtin, Options: opts, Validator: v}, nil
}

// LintFile checks every preset in a file. It returns their problems, each
// "where: message" (a file that cannot be read or decoded, or holds no
// preset, is one), and how many presets the file holds.
func (l *Linter) LintFile(ctx context.Context, file string) (problems []string, count int) {
	data, err := os.ReadFile(file)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", file, err)}, 0
	}
	ps, err := manifest.DecodePresets(file, data)
	if err != nil {
		return []string{err.Error()}, 0
	}
	if len(ps) == 0 {
		return []string{fmt.Sprintf("%s: no LLMInferenceServiceConfig in the file", file)}, 0
	}
	for _, p := range ps {
		problems = append(problems, l.Lint(ctx, p)...)
	}
	return problems, len(ps)
}

// Lint checks one preset and returns its problems, each "where: message".
func (l *Linter) Lint(ctx context.Context, p *preset.Preset) []string {
	opts := l.Options
	if opts.SystemNamespace == "" {
		opts.SystemNamespace = engine.DefaultSystemNamespace
	}
	prefix := preset.DefaultPrefix
	if opts.PresetPrefix != nil {
		prefix = *opts.PresetPrefix
	}
	ns := p.Namespace
	if ns == "" {
		ns = opts.SystemNamespace
	}
	where := p.File
	if where == "" {
		where = p.Name
	}
	catalog, err := preset.Overlay(opts.SystemNamespace, l.Builtin, []*preset.Preset{p})
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", where, err)}
	}
	var problems []string
	tried := 0
	for _, s := range Samples {
		svc := &v1alpha2.LLMInferenceService{
			ObjectMeta: metav1.ObjectMeta{Name: "lint-" + s.Name, Namespace: ns},
			Spec:       *s.Spec.DeepCopy(),
		}
		svc.Spec.Model.URI = "hf://example/model"
		if !wellKnown(p.Name, prefix) {
			if !fits(p.Spec, &svc.Spec) {
				continue
			}
			svc.Spec.BaseRefs = []corev1.LocalObjectReference{{Name: p.Name}}
		} else if !contains(preset.WellKnown(&svc.Spec, prefix), p.Name) {
			continue
		}
		tried++
		res, err := engine.Render(ctx, svc, catalog, opts)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: preset %s in a %s service: %v", where, p.Name, s.Name, err))
			continue
		}
		objs, err := res.Unstructured()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: preset %s in a %s service: %v", where, p.Name, s.Name, err))
			continue
		}
		for _, o := range objs {
			if !l.Validator.Knows(o.GroupVersionKind()) {
				continue // a built-in kind, built from typed Go values
			}
			for _, e := range l.Validator.Validate(ctx, o) {
				problems = append(problems, fmt.Sprintf("%s: preset %s in a %s service renders an invalid %s: %s",
					where, p.Name, s.Name, o.GetKind(), e.Error()))
			}
		}
	}
	if tried == 0 {
		problems = append(problems, fmt.Sprintf("%s: preset %s fits none of the sample topologies (%s)", where, p.Name, sampleNames()))
	}
	return problems
}

// fits reports whether a preset used as a baseRef keeps the sample's shape:
// a preset with a worker needs a multi-node sample, one with prefill a
// prefill sample.
func fits(p, sample *v1alpha2.LLMInferenceServiceSpec) bool {
	if p.Worker != nil && sample.Worker == nil {
		return false
	}
	if p.Worker == nil && sample.Worker != nil && p.Template != nil && p.Parallelism == nil {
		return false // a single-node template on a multi-node sample says nothing new
	}
	if p.Prefill != nil && sample.Prefill == nil {
		return false
	}
	if p.Prefill != nil && p.Prefill.Worker != nil && sample.Prefill.Worker == nil {
		return false
	}
	return true
}

func wellKnown(name, prefix string) bool {
	return contains(preset.WellKnownNames, strings.TrimPrefix(name, prefix)) && strings.HasPrefix(name, prefix)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sampleNames() string {
	names := make([]string, len(Samples))
	for i, s := range Samples {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}
