package offline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/presets"
)

type renderFlags struct {
	engineFlags
	files      []string
	presetDirs []string
	namespace  string
	output     string
	explain    bool
	// tierPrefix names the MaaS tiers' namespaces when the input holds
	// the tier ConfigMap.
	tierPrefix string
}

// NewRender is the render command.
func NewRender(s Streams) *cobra.Command {
	f := &renderFlags{}
	cmd := &cobra.Command{
		Use:   "render -f SERVICE.yaml [-f MORE.yaml]",
		Short: "Render LLMInferenceServices into the Kubernetes objects that run them, offline",
		Long: `render reads LLMInferenceService objects (and any LLMInferenceServiceConfig
presets beside them) and prints the child objects odh-serving would create:
workloads, Services, the scheduler, InferencePools and the HTTPRoute.

Presets come from the ones built in, from --presets folders and from the
input files; a preset given by you replaces a built-in one of the same name
and namespace. When the input holds the MaaS tier ConfigMap
(tier-to-group-mapping), services with the alpha.maas.opendatahub.io/tiers
annotation also get their model-user Role and tier RoleBindings, as the
controller's --maas renders them. A service whose endpoint picker reads its
configuration from a ConfigMap (spec.router.scheduler.config.ref) finds it
among the input's ConfigMaps. Manifests go to stdout, diagnostics to
stderr; on any error nothing is written to stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRender(cmd.Context(), s, f) },
	}
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "input file, multi-document YAML or JSON; - reads stdin (repeatable)")
	cmd.Flags().StringArrayVar(&f.presetDirs, "presets", nil, "folder of preset YAML files, searched recursively (repeatable)")
	f.register(cmd.Flags())
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "default", "namespace for services that name none")
	cmd.Flags().StringVarP(&f.output, "output", "o", "yaml", "output format: yaml or json")
	cmd.Flags().BoolVar(&f.explain, "explain", false, "print to stderr which presets applied and which one set each field")
	cmd.Flags().StringVar(&f.tierPrefix, "tier-namespace-prefix", tier.DefaultNamespacePrefix,
		"with a tier ConfigMap in the input: a MaaS tier's namespace is this prefix and the tier's name")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runRender(ctx context.Context, s Streams, f *renderFlags) error {
	opts, err := f.options()
	if err != nil {
		return err
	}
	if f.output != "yaml" && f.output != "json" {
		return fmt.Errorf("unknown output format %q: want yaml or json", f.output)
	}
	var services []*manifest.Service
	var userPresets []*preset.Preset
	var configMaps []manifest.Document
	var errs []error
	for _, file := range f.files {
		data, name, err := readInput(s.In, file)
		if err != nil {
			return err
		}
		in, err := manifest.Decode(name, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		services = append(services, in.Services...)
		userPresets = append(userPresets, in.Presets...)
		for _, o := range in.Other {
			switch {
			case isConfigMap(o) && o.Object.GetName() == tier.ConfigMapName:
				if err := f.readTiers(&opts, o); err != nil {
					errs = append(errs, err)
				}
			case isConfigMap(o):
				configMaps = append(configMaps, o)
			default:
				errs = append(errs, fmt.Errorf("%s: %s %s is neither an LLMInferenceService, an LLMInferenceServiceConfig nor a ConfigMap (the tier list %s, or one a service names)",
					o.Where(), o.Object.GetKind(), o.Object.GetName(), tier.ConfigMapName))
			}
		}
	}
	for _, dir := range f.presetDirs {
		ps, err := LoadPresetDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		userPresets = append(userPresets, ps...)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(services) == 0 {
		return errors.New("the input holds no LLMInferenceService")
	}
	catalog, err := presets.Catalog(opts.SystemNamespace, *opts.PresetPrefix, userPresets)
	if err != nil {
		return err
	}
	opts.ConfigMaps = inputConfigMaps(configMaps, f.namespace)
	var explainTo io.Writer
	if f.explain {
		explainTo = s.Err
	}
	objs, err := renderServices(ctx, services, catalog, opts, f.namespace, explainTo, s.Err)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if f.output == "json" {
		err = manifest.WriteJSON(&buf, objs)
	} else {
		err = manifest.WriteYAML(&buf, objs)
	}
	if err != nil {
		return err
	}
	_, err = s.Out.Write(buf.Bytes())
	return err
}

// readTiers sets opts.Tiers from the tier ConfigMap d, read as the
// controller and the MaaS API server read it (tier.FromConfigMap): one
// without the key tiers is an error, not an empty tier list.
func (f *renderFlags) readTiers(opts *engine.Options, d manifest.Document) error {
	if opts.Tiers != nil {
		return fmt.Errorf("%s: a second ConfigMap %s; give one tier list", d.Where(), tier.ConfigMapName)
	}
	cm := &corev1.ConfigMap{}
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(d.Object.Object, cm); err != nil {
		return fmt.Errorf("%s: ConfigMap %s: %w", d.Where(), d.Object.GetName(), err)
	}
	cfg, err := tier.FromConfigMap(cm, f.tierPrefix)
	if err != nil {
		return fmt.Errorf("%s: %w", d.Where(), err)
	}
	opts.Tiers = cfg
	return nil
}

func readInput(stdin io.Reader, file string) ([]byte, string, error) {
	if file == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, "", fmt.Errorf("read stdin: %w", err)
		}
		return data, "<stdin>", nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, "", fmt.Errorf("read input: %w", err)
	}
	return data, file, nil
}

// LoadPresetDir reads the presets in the YAML files under dir.
func LoadPresetDir(dir string) ([]*preset.Preset, error) {
	var out []*preset.Preset
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ps, err := manifest.DecodePresets(path, data)
		if err != nil {
			return err
		}
		out = append(out, ps...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read presets from %s: %w", dir, err)
	}
	return out, nil
}

// warn writes a service's warnings, each naming the input and the service.
func warn(w io.Writer, in *manifest.Service, warnings []string) {
	if w == nil {
		return
	}
	for _, msg := range warnings {
		fmt.Fprintf(w, "warning: %s: LLMInferenceService %s/%s: %s\n", in.Where, in.Service.Namespace, in.Service.Name, msg)
	}
}

func explain(w io.Writer, name string, e *engine.Explanation) {
	fmt.Fprintf(w, "# %s: layers, first to last (the last one wins)\n", name)
	for i, l := range e.Layers {
		fmt.Fprintf(w, "#  %d. %-10s %s (%d fields)\n", i+1, l.Why, l.Name, len(l.Fields))
	}
	fmt.Fprintf(w, "# %s: the layer each field comes from\n", name)
	fields := make([]string, 0, len(e.Winners))
	for f := range e.Winners {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	for _, f := range fields {
		fmt.Fprintf(w, "#  %s <- %s\n", f, e.Winners[f])
	}
}

// renderServices renders each service (with the built-in images unless
// opts names them) and returns all children in input order. Services
// without a namespace get defaultNamespace; when that is empty too, they
// are an error. explainTo, when set, receives each service's explanation;
// warnTo each service's warnings (fields accepted but not acted on).
// Every service is tried, so one run reports every failure.
func renderServices(ctx context.Context, services []*manifest.Service, catalog *preset.Catalog, opts engine.Options,
	defaultNamespace string, explainTo, warnTo io.Writer,
) ([]*unstructured.Unstructured, error) {
	type rendered struct {
		objs        []*unstructured.Unstructured
		explanation *engine.Explanation
		warnings    []string
	}
	results, err := renderEach(ctx, services, catalog, opts, defaultNamespace,
		func(res *engine.Result, objs []*unstructured.Unstructured) (rendered, error) {
			return rendered{objs: objs, explanation: &res.Explanation, warnings: res.Warnings}, nil
		})
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for i, r := range results {
		objs = append(objs, r.objs...)
		warn(warnTo, services[i], r.warnings)
		if explainTo != nil {
			svc := services[i].Service
			explain(explainTo, svc.Namespace+"/"+svc.Name, r.explanation)
		}
	}
	return objs, nil
}

// renderEach renders the services on every core and hands each one's
// result and children to done on the core that rendered it, so what done
// does (writing YAML) runs in parallel too and the children need not stay
// in memory. The results and the errors keep the input order; every
// service is tried.
func renderEach[T any](ctx context.Context, services []*manifest.Service, catalog *preset.Catalog, opts engine.Options, defaultNamespace string,
	done func(*engine.Result, []*unstructured.Unstructured) (T, error),
) ([]T, error) {
	if opts.Images == nil {
		images, err := presets.Images()
		if err != nil {
			return nil, err
		}
		opts.Images = images
	}
	results := make([]T, len(services))
	errs := make([]error, len(services))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(services)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(services); i = int(next.Add(1) - 1) {
				res, objs, err := renderService(ctx, services[i], catalog, opts, defaultNamespace)
				if err == nil {
					if results[i], err = done(res, objs); err != nil {
						err = fmt.Errorf("%s: %w", services[i].Where, err)
					}
				}
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

func renderService(ctx context.Context, in *manifest.Service, catalog *preset.Catalog, opts engine.Options, defaultNamespace string,
) (*engine.Result, []*unstructured.Unstructured, error) {
	svc := in.Service
	if svc.Namespace == "" {
		if defaultNamespace == "" {
			return nil, nil, fmt.Errorf("%s: LLMInferenceService %s has no namespace; pass the release namespace with --namespace", in.Where, svc.Name)
		}
		svc.Namespace = defaultNamespace
	}
	res, err := engine.Render(ctx, svc, catalog, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", in.Where, err)
	}
	if err := res.Access.Err; err != nil {
		// Offline there is no condition to report it on.
		return nil, nil, fmt.Errorf("%s: LLMInferenceService %s/%s: %w", in.Where, svc.Namespace, svc.Name, err)
	}
	objs, err := res.Unstructured()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", in.Where, err)
	}
	return res, objs, nil
}
