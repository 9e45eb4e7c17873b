package cli

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/presets"
)

// Post-render modes.
const (
	modeController = "controller"
	modeStatic     = "static"
)

type postRenderFlags struct {
	engineFlags
	mode      string
	namespace string
}

func newPostRender(s Streams) *cobra.Command {
	f := &postRenderFlags{}
	cmd := &cobra.Command{
		Use:   "post-render [--mode controller|static]",
		Short: "Helm post-renderer: expand LLMInferenceServices in the stream on stdin",
		Long: `post-render reads the stream Helm renders on stdin and writes the result on
stdout, for helm install/upgrade/template --post-renderer.

In static mode every LLMInferenceService is expanded into its children with
the same engine as render and the controller. Presets come from the stream
(the chart's presets and team presets) and from the built-in ones; a preset
in the stream replaces a built-in one of the same name. Everything in the
stream stays in the output, followed by the children.

In controller mode the stream passes through untouched: the controller
expands the services in the cluster.

On any error nothing is written to stdout and the exit code is 1.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runPostRender(s, f) },
	}
	cmd.Flags().StringVar(&f.mode, "mode", modeController, "controller (pass through) or static (expand services)")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "namespace for services that name none (the Helm release namespace)")
	f.register(cmd.Flags())
	return cmd
}

func runPostRender(s Streams, f *postRenderFlags) error {
	data, err := io.ReadAll(s.In)
	if err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	switch f.mode {
	case modeController:
		_, err := s.Out.Write(data)
		return err
	case modeStatic:
	default:
		return fmt.Errorf("unknown mode %q: want controller or static", f.mode)
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	in, err := manifest.Decode("<stdin>", data)
	if err != nil {
		return err
	}
	catalog, err := presets.Catalog(f.systemNamespace, f.prefix, in.Presets)
	if err != nil {
		return err
	}
	children, err := renderServices(in.Services, catalog, opts, f.namespace, nil)
	if err != nil {
		return err
	}
	out := make([]*unstructured.Unstructured, 0, len(in.Docs)+len(children))
	for _, d := range in.Docs {
		out = append(out, d.Object)
	}
	out = append(out, children...)
	var buf bytes.Buffer
	if err := manifest.WriteYAML(&buf, out); err != nil {
		return err
	}
	_, err = s.Out.Write(buf.Bytes())
	return err
}
