package crdlifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Names odh-serving marks its CRDs with.
const (
	// AnnotationBundleVersion is the GIE release a CRD comes from.
	AnnotationBundleVersion = "inference.networking.k8s.io/bundle-version"
	// AnnotationLLMDBundleVersion is the llm-d release of the llm-d.ai CRDs
	// that replace GIE's objectives; read, as another owner may install them.
	AnnotationLLMDBundleVersion = "llm-d.ai/bundle-version"
	// Alpha2PoolCRD is the v1alpha2 InferencePool CRD.
	Alpha2PoolCRD = "inferencepools.inference.networking.x-k8s.io"
)

// ApplyOptions say which CRDs to apply.
type ApplyOptions struct {
	// Alpha2 keeps the v1alpha2 InferencePool CRD up to date. Set it while
	// any service's migration is unfinished (migration.Unfinished). It is
	// never created where it is absent, and never deleted.
	Alpha2 bool
}

// Action is what Apply did with one CRD.
type Action string

// The actions of a Report.
const (
	ActionApplied   Action = "Applied"
	ActionUnchanged Action = "Unchanged"
	ActionSkipped   Action = "Skipped"
)

// Result is what Apply did with one CRD, and why.
type Result struct {
	Name   string
	Action Action
	Reason string
	// Ours and Live are the bundle versions of our CRD and of the live one
	// (empty when it has none or is absent).
	Ours, Live string
}

// Report lists what Apply did, one Result a CRD, in a stable order.
type Report struct {
	Results []Result
}

// Skipped lists the CRDs Apply left alone, for an event or a condition.
func (r Report) Skipped() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Action == ActionSkipped {
			out = append(out, res)
		}
	}
	return out
}

// String is one line a CRD: name, action, reason.
func (r Report) String() string {
	var b strings.Builder
	for _, res := range r.Results {
		fmt.Fprintf(&b, "%s: %s (%s)\n", res.Name, res.Action, res.Reason)
	}
	return b.String()
}

var loadGIE = sync.OnceValues(func() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return crds.Load(crds.GIE)
})

// GIECRDs are the embedded GIE CRDs as Apply writes them: labelled and
// defaulted the way the API server defaults them. The caller may change
// them.
func GIECRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	loaded, err := loadGIE()
	if err != nil {
		return nil, fmt.Errorf("load the embedded GIE CRDs: %w", err)
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(loaded))
	for _, crd := range loaded {
		crd = crd.DeepCopy()
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		crd.Labels[convention.LabelManagedBy] = convention.ManagedBy
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
		crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		out = append(out, crd)
	}
	return out, nil
}

// Apply installs or upgrades the GIE CRDs with server-side apply, field
// manager odh-serving, forcing ownership of the fields it sets. It leaves
// alone a live CRD with a newer bundle version and writes nothing to one
// that already holds what it would apply.
func Apply(ctx context.Context, c client.Client, opts ApplyOptions) (Report, error) {
	want, err := GIECRDs()
	if err != nil {
		return Report{}, err
	}
	var report Report
	for _, crd := range want {
		res, err := applyOne(ctx, c, crd, opts)
		if err != nil {
			return report, err
		}
		report.Results = append(report.Results, res)
	}
	return report, nil
}

func applyOne(ctx context.Context, c client.Client, want *apiextensionsv1.CustomResourceDefinition, opts ApplyOptions) (Result, error) {
	res := Result{Name: want.Name, Ours: bundleVersion(want)}
	live := &apiextensionsv1.CustomResourceDefinition{}
	err := c.Get(ctx, client.ObjectKey{Name: want.Name}, live)
	switch {
	case apierrors.IsNotFound(err):
		if want.Name == Alpha2PoolCRD {
			res.Action, res.Reason = ActionSkipped, "not installed; the v1alpha2 InferencePool CRD is never created, so services go straight to v1"
			return res, nil
		}
		res.Action, res.Reason = ActionApplied, "not installed"
		return res, serverSideApply(ctx, c, want)
	case err != nil:
		return res, fmt.Errorf("read CRD %s: %w", want.Name, err)
	}
	res.Live = bundleVersion(live)
	if release := helmRelease(live); release != "" {
		res.Action, res.Reason = ActionSkipped, fmt.Sprintf("installed by Helm release %s, which owns and upgrades it", release)
		return res, nil
	}
	if want.Name == Alpha2PoolCRD && !opts.Alpha2 {
		res.Action, res.Reason = ActionSkipped, "no service needs the v1alpha2 InferencePool any more; left as it is"
		return res, nil
	}
	if res.Live != "" {
		newer, err := newerThan(res.Live, res.Ours)
		if err != nil {
			res.Action, res.Reason = ActionSkipped, fmt.Sprintf("live bundle version %q cannot be compared with ours (%s): %v", res.Live, res.Ours, err)
			return res, nil
		}
		if newer {
			res.Action, res.Reason = ActionSkipped, fmt.Sprintf("live bundle version %s is newer than ours (%s); not downgraded", res.Live, res.Ours)
			return res, nil
		}
	}
	same, err := holds(live, want)
	if err != nil {
		return res, fmt.Errorf("compare CRD %s with ours: %w", want.Name, err)
	}
	if same {
		res.Action, res.Reason = ActionUnchanged, "already as ours"
		return res, nil
	}
	res.Action, res.Reason = ActionApplied, "differs from ours"
	if res.Live != res.Ours {
		res.Reason = fmt.Sprintf("upgraded from bundle version %s", orNone(res.Live))
	}
	return res, serverSideApply(ctx, c, want)
}

// helmRelease names the Helm release (namespace/name) a CRD belongs to, as
// Helm marks what it installs; empty when Helm did not install it.
func helmRelease(crd *apiextensionsv1.CustomResourceDefinition) string {
	name, ns := crd.Annotations["meta.helm.sh/release-name"], crd.Annotations["meta.helm.sh/release-namespace"]
	switch {
	case name != "":
		return ns + "/" + name
	case crd.Labels["app.kubernetes.io/managed-by"] == "Helm":
		return "(unnamed)"
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// bundleVersion is the GIE or llm-d bundle version a CRD carries.
func bundleVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	if v := crd.Annotations[AnnotationBundleVersion]; v != "" {
		return v
	}
	return crd.Annotations[AnnotationLLMDBundleVersion]
}

// newerThan compares two bundle versions as semantic versions (a leading
// v is allowed; v1.5.0-rc.2 is older than v1.5.0).
func newerThan(live, ours string) (bool, error) {
	l, err := version.ParseSemantic(live)
	if err != nil {
		return false, err
	}
	o, err := version.ParseSemantic(ours)
	if err != nil {
		return false, fmt.Errorf("our bundle version: %w", err)
	}
	return o.LessThan(l), nil
}

// holds reports whether the live CRD already has every label, annotation
// and spec field of ours with our values. Lists must match item by item.
func holds(live, want *apiextensionsv1.CustomResourceDefinition) (bool, error) {
	for k, v := range want.Labels {
		if live.Labels[k] != v {
			return false, nil
		}
	}
	for k, v := range want.Annotations {
		if live.Annotations[k] != v {
			return false, nil
		}
	}
	l, err := jsonTree(live.Spec)
	if err != nil {
		return false, err
	}
	w, err := jsonTree(want.Spec)
	if err != nil {
		return false, err
	}
	return subset(w, l), nil
}

func jsonTree(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(data, &out)
}

// subset says whether every field of want is in have with the same value.
func subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			hv, ok := h[k]
			if !ok || !subset(v, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, have)
}

// serverSideApply writes our CRD with no status and no creation time, so
// only the fields we mean are ours.
func serverSideApply(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return fmt.Errorf("convert CRD %s: %w", crd.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	u.SetAPIVersion(apiextensionsv1.SchemeGroupVersion.String())
	u.SetKind("CustomResourceDefinition")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(convention.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply CRD %s: %w", crd.Name, err)
	}
	return nil
}
