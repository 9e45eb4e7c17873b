package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/internal/cli/offline"
	"github.com/opendatahub-io/odh-serving/internal/presetlint"
	"github.com/opendatahub-io/odh-serving/presets"
)

type presetFlags struct {
	systemNamespace string
	prefix          string
	dirs            []string
	kubeconfig      string
}

func newPresets(s Streams) *cobra.Command {
	f := &presetFlags{}
	cmd := &cobra.Command{
		Use:   "presets",
		Short: "List, show and lint LLMInferenceServiceConfig presets",
	}
	cmd.PersistentFlags().StringVar(&f.systemNamespace, "system-namespace", engine.DefaultSystemNamespace, "namespace of the shared presets")
	cmd.PersistentFlags().StringVar(&f.prefix, "preset-prefix", preset.DefaultPrefix, "prefix of the built-in preset names")
	cmd.AddCommand(
		&cobra.Command{
			Use:   "list",
			Short: "List the built-in presets and those in --presets folders, and which one shadows which",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return listPresets(s, f) },
		},
		&cobra.Command{
			Use:   "show NAME",
			Short: "Print a built-in preset (or one from --presets) as YAML",
			Args:  cobra.ExactArgs(1),
			RunE:  func(_ *cobra.Command, args []string) error { return showPreset(s, f, args[0]) },
		},
		&cobra.Command{
			Use:   "lint FILE...",
			Short: "Render presets into sample services of every topology they fit and check the output against the real CRD schemas",
			Long: `lint decodes each preset strictly, renders it into sample services of
every topology it can apply to (a well-known preset where its shape picks it,
any other preset as a baseRef), and checks every custom resource that comes
out against the bundled CRDs' OpenAPI schemas and CEL rules, offline.
Problems are printed as "file:line: message"; the exit code is 1 if any.`,
			Args: cobra.MinimumNArgs(1),
			RunE: func(_ *cobra.Command, args []string) error { return lintPresets(s, f, args) },
		},
	)
	cmd.PersistentFlags().StringArrayVar(&f.dirs, "presets", nil, "folder of preset YAML files, searched recursively (repeatable)")
	cmd.PersistentFlags().StringVar(&f.kubeconfig, "kubeconfig", "", "with list: also list the presets in this cluster")
	return cmd
}

func builtinPresets(f *presetFlags) ([]*preset.Preset, error) {
	return presets.Load(f.systemNamespace, f.prefix)
}

func listPresets(s Streams, f *presetFlags) error {
	builtin, err := builtinPresets(f)
	if err != nil {
		return err
	}
	var others []listedPreset
	for _, dir := range f.dirs {
		ps, err := offline.LoadPresetDir(dir)
		if err != nil {
			return err
		}
		for _, p := range ps {
			others = append(others, listedPreset{p, p.File})
		}
	}
	if f.kubeconfig != "" {
		ps, err := clusterPresets(f.kubeconfig)
		if err != nil {
			return err
		}
		for _, p := range ps {
			others = append(others, listedPreset{p, "cluster"})
		}
	}
	key := func(p *preset.Preset) string {
		ns := p.Namespace
		if ns == "" {
			ns = f.systemNamespace
		}
		return ns + "/" + p.Name
	}
	replaced := map[string]string{}
	for _, o := range others {
		replaced[key(o.Preset)] = o.source
	}
	w := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tNAMESPACE\tSOURCE\tNOTE")
	for _, p := range builtin {
		note := ""
		if source, ok := replaced[key(p)]; ok {
			note = "replaced by " + source
		}
		fmt.Fprintf(w, "%s\t%s\tbuilt-in\t%s\n", p.Name, p.Namespace, note)
	}
	system := map[string]bool{}
	for _, p := range builtin {
		system[p.Name] = true
	}
	for _, o := range others {
		if key(o.Preset) == f.systemNamespace+"/"+o.Name {
			system[o.Name] = true
		}
	}
	for _, o := range others {
		ns := o.Namespace
		if ns == "" {
			ns = f.systemNamespace
		}
		note := ""
		if ns != f.systemNamespace && system[o.Name] {
			note = "shadows the system preset in namespace " + ns
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", o.Name, ns, o.source, note)
	}
	return w.Flush()
}

type listedPreset struct {
	*preset.Preset
	source string
}

// clusterPresets lists the LLMInferenceServiceConfigs of every namespace.
func clusterPresets(kubeconfig string) ([]*preset.Preset, error) {
	c, _, err := connect(kubeconfig, v1alpha2.AddToScheme)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var list v1alpha2.LLMInferenceServiceConfigList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list LLMInferenceServiceConfigs with kubeconfig %s: %w", kubeconfig, err)
	}
	out := make([]*preset.Preset, 0, len(list.Items))
	for i := range list.Items {
		item := &list.Items[i]
		out = append(out, &preset.Preset{Name: item.Name, Namespace: item.Namespace, Spec: &item.Spec})
	}
	return out, nil
}

func showPreset(s Streams, f *presetFlags, name string) error {
	all, err := builtinPresets(f)
	if err != nil {
		return err
	}
	for _, dir := range f.dirs {
		ps, err := offline.LoadPresetDir(dir)
		if err != nil {
			return err
		}
		all = append(ps, all...) // the user's first: they replace built-in ones
	}
	for _, p := range all {
		if p.Name != name {
			continue
		}
		obj := v1alpha2.LLMInferenceServiceConfig{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "LLMInferenceServiceConfig"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
			Spec:       *p.Spec,
		}
		out, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("encode preset %s: %w", p.ID(), err)
		}
		_, err = s.Out.Write(out)
		return err
	}
	return fmt.Errorf("no preset named %q; `odh-serving presets list` shows them", name)
}

func lintPresets(s Streams, f *presetFlags, files []string) error {
	builtin, err := builtinPresets(f)
	if err != nil {
		return err
	}
	l, err := presetlint.New(builtin, engine.Options{SystemNamespace: f.systemNamespace, PresetPrefix: &f.prefix})
	if err != nil {
		return err
	}
	var problems []string
	count := 0
	for _, file := range files {
		found, n := l.LintFile(context.Background(), file)
		problems = append(problems, found...)
		count += n
	}
	for _, p := range problems {
		fmt.Fprintln(s.Out, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s) in %d preset(s)", len(problems), count)
	}
	fmt.Fprintf(s.Err, "%d preset(s) ok\n", count)
	return nil
}
