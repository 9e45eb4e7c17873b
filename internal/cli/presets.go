package cli

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/internal/presetlint"
	"github.com/opendatahub-io/odh-serving/presets"
)

type presetFlags struct {
	systemNamespace string
	prefix          string
	dirs            []string
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
	var user []*preset.Preset
	for _, dir := range f.dirs {
		ps, err := loadPresetDir(dir)
		if err != nil {
			return err
		}
		user = append(user, ps...)
	}
	key := func(p *preset.Preset) string {
		ns := p.Namespace
		if ns == "" {
			ns = f.systemNamespace
		}
		return ns + "/" + p.Name
	}
	replaced := map[string]string{}
	for _, p := range user {
		replaced[key(p)] = p.File
	}
	w := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tNAMESPACE\tSOURCE\tNOTE")
	for _, p := range builtin {
		note := ""
		if file, ok := replaced[key(p)]; ok {
			note = "replaced by " + file
		}
		fmt.Fprintf(w, "%s\t%s\tbuilt-in\t%s\n", p.Name, p.Namespace, note)
	}
	for _, p := range user {
		note := ""
		if p.Namespace != "" && p.Namespace != f.systemNamespace {
			for _, b := range builtin {
				if b.Name == p.Name {
					note = "shadows the built-in one in namespace " + p.Namespace
				}
			}
		}
		ns := p.Namespace
		if ns == "" {
			ns = f.systemNamespace
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Name, ns, p.File, note)
	}
	return w.Flush()
}

func showPreset(s Streams, f *presetFlags, name string) error {
	all, err := builtinPresets(f)
	if err != nil {
		return err
	}
	for _, dir := range f.dirs {
		ps, err := loadPresetDir(dir)
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
	images, err := presets.Images()
	if err != nil {
		return err
	}
	defs, err := crds.Load(crds.GIE, crds.GatewayAPI, crds.LWS, crds.CertManager)
	if err != nil {
		return err
	}
	validator, err := crds.NewValidator(defs)
	if err != nil {
		return err
	}
	l := &presetlint.Linter{
		Builtin:   builtin,
		Options:   engine.Options{SystemNamespace: f.systemNamespace, PresetPrefix: &f.prefix, Images: images},
		Validator: validator,
	}
	var problems []string
	count := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", file, err))
			continue
		}
		ps, err := manifest.DecodePresets(file, data)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if len(ps) == 0 {
			problems = append(problems, fmt.Sprintf("%s: no LLMInferenceServiceConfig in the file", file))
		}
		for _, p := range ps {
			count++
			problems = append(problems, l.Lint(context.Background(), p)...)
		}
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
