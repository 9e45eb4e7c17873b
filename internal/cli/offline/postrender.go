package offline

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/overlay"
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
	overlays  []string
}

// NewPostRender is the post-render command, Helm's post-renderer.
func NewPostRender(s Streams) *cobra.Command {
	f := &postRenderFlags{}
	cmd := &cobra.Command{
		Use:   "post-render [--mode controller|static] [--overlay NAME|DIR]...",
		Short: "Helm post-renderer: expand LLMInferenceServices in the stream on stdin",
		Long: `post-render reads the stream Helm renders on stdin and writes the result on
stdout, for helm install/upgrade/template --post-renderer.

In static mode every LLMInferenceService is expanded into its children with
the same engine as render and the controller. Presets come from the stream
(the chart's presets and team presets) and from the built-in ones; a preset
in the stream replaces a built-in one of the same name; the ConfigMaps that
services name (spec.router.scheduler.config.ref) come from the stream too.
Everything in the stream stays in the output, followed by the children. The controller still
moves the HTTPRoutes' backendRef weights through the InferencePool
migration; those routes carry the annotation
` + convention.AnnotationWeightsManagedBy + `: controller. A workload an autoscaler
scales (spec.scaling) has no spec.replicas and carries the label
` + convention.LabelMinReplicas + ` with the autoscaler's minimum: the
chart's replicas webhook then keeps its live count through every upgrade.

With --cert-mode self-signed (the default) nothing in the output makes
the Secret <name>-kserve-self-signed-certs that the pods mount: the
controller writes it in the cluster, in static mode too, and the pods start
once it is there. Where no odh-serving controller runs, use --cert-mode
cert-manager or service-ca.

With --enable-auth in static mode, fail closed (docs/auth.md): the managed
route of a service not opened with ` + convention.AnnotationEnableAuth + `: "false"
must attach only to Gateways that an AuthPolicy in the stream targets (the
chart's <gateway>-authn with auth.enabled=true), or post-render fails. The
output then holds an AuthPolicy wherever it holds a route, so Helm refuses
the whole release while Kuadrant's CRDs are missing.

In controller mode the stream passes through untouched: the controller
expands the services in the cluster.

--overlay applies a kustomize overlay to the result, in memory: a built-in
one by name (` + builtinOverlays() + `) or a folder holding a
kustomization.yaml (./NAME for a folder that shares a built-in's name).
Repeat it to apply several, in order.

On any error nothing is written to stdout and the exit code is 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPostRender(cmd.Context(), s, f) },
	}
	cmd.Flags().StringVar(&f.mode, "mode", modeController, "controller (pass through) or static (expand services)")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "namespace for services that name none (the Helm release namespace)")
	cmd.Flags().StringArrayVar(&f.overlays, "overlay", nil, "kustomize overlay to apply: built-in name ("+builtinOverlays()+") or folder (repeatable)")
	f.register(cmd.Flags())
	return cmd
}

func builtinOverlays() string { return strings.Join(overlay.Builtins(), ", ") }

func runPostRender(ctx context.Context, s Streams, f *postRenderFlags) error {
	if f.mode != modeController && f.mode != modeStatic {
		return fmt.Errorf("unknown mode %q: want controller or static", f.mode)
	}
	var overlays []*overlay.Overlay
	for _, ref := range f.overlays {
		o, err := overlay.Load(ref)
		if err != nil {
			return err
		}
		overlays = append(overlays, o)
	}
	data, err := io.ReadAll(s.In)
	if err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	if f.mode == modeStatic {
		// A post-render is a short batch job: fewer, later collections
		// save more processor time (a third of it for one service) than
		// they cost memory (330 MB at the peak for 1,000 services).
		// GOGC in the environment wins.
		if os.Getenv("GOGC") == "" {
			defer debug.SetGCPercent(debug.SetGCPercent(400))
		}
		if data, err = expandStatic(ctx, data, f, s.Err); err != nil {
			return err
		}
	}
	for _, o := range overlays {
		if data, err = o.Apply(data); err != nil {
			return err
		}
	}
	_, err = s.Out.Write(data)
	return err
}

// expandStatic renders every service of the stream and returns the stream
// followed by the children; the services' warnings go to warnTo.
func expandStatic(ctx context.Context, data []byte, f *postRenderFlags, warnTo io.Writer) ([]byte, error) {
	opts, err := f.options()
	if err != nil {
		return nil, err
	}
	in, err := manifest.Decode("<stdin>", data)
	if err != nil {
		return nil, err
	}
	// The stream's presets (the chart's) replace the built-in ones.
	catalog, err := presets.Catalog(opts.SystemNamespace, *opts.PresetPrefix, in.Presets)
	if err != nil {
		return nil, err
	}
	opts.ConfigMaps = inputConfigMaps(in.Other, f.namespace)
	guarded := guardedGateways(in.Docs, f.namespace)
	// Each service's children are written as YAML where they are rendered
	// and dropped: a thousand services' objects never sit in memory at once.
	type chunk struct {
		yaml     []byte
		warnings []string
	}
	chunks, err := renderEach(ctx, in.Services, catalog, opts, f.namespace,
		func(res *engine.Result, children []*unstructured.Unstructured) (chunk, error) {
			if opts.Auth {
				if err := checkGuarded(res, children, guarded); err != nil {
					return chunk{}, err
				}
			}
			for _, c := range children {
				if c.GetKind() == "HTTPRoute" && c.GroupVersionKind().Group == "gateway.networking.k8s.io" {
					markWeightsManaged(c)
				}
			}
			markScaled(children)
			var buf bytes.Buffer
			err := manifest.WriteYAML(&buf, children)
			return chunk{yaml: buf.Bytes(), warnings: res.Warnings}, err
		})
	if err != nil {
		return nil, err
	}
	for i, c := range chunks {
		warn(warnTo, in.Services[i], c.warnings)
	}
	stream := make([]*unstructured.Unstructured, len(in.Docs))
	for i, d := range in.Docs {
		stream[i] = d.Object
	}
	var out bytes.Buffer
	if err := manifest.WriteYAML(&out, stream); err != nil {
		return nil, err
	}
	for _, c := range chunks {
		if len(c.yaml) == 0 {
			continue
		}
		if out.Len() > 0 {
			out.WriteString("---\n")
		}
		out.Write(c.yaml)
	}
	return out.Bytes(), nil
}

// markWeightsManaged annotates a route whose weights the controller moves.
func markWeightsManaged(route *unstructured.Unstructured) {
	ann := route.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[convention.AnnotationWeightsManagedBy] = "controller"
	route.SetAnnotations(ann)
}
