package migrationtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/crdlifecycle"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

const (
	v1PoolCRD     = "inferencepools.inference.networking.k8s.io"
	objectivesCRD = "inferenceobjectives.inference.networking.x-k8s.io"
	// crdCreator is the field manager of the serving CRDs as withoutGIE
	// creates them: kubectl create's.
	crdCreator = "kubectl-create"
)

// TestCRDLifecycle walks the GIE CRDs through a control plane that has
// none of them (the package's, emptied of them by withoutGIE): apply, apply
// again with no write, the bundle-version gate both ways, `crds status`,
// and `crds remove` refusing while custom resources are left and
// succeeding once they are gone. Steps share the cluster, so they run in
// order.
func TestCRDLifecycle(t *testing.T) {
	bare := withoutGIE(t)
	ctx := t.Context()
	c, w := testenv.RecordingClient(t, bare.Config, bare.Scheme)

	// Someone else (KServe, say) installed a newer v1alpha2 InferencePool CRD.
	foreign := loadCRD(t, crdlifecycle.Alpha2PoolCRD)
	foreign.Annotations[crdlifecycle.AnnotationBundleVersion] = "v1.5.0"
	applyAs(t, c, foreign, "kserve")
	waitEstablished(t, c, crdlifecycle.Alpha2PoolCRD)

	golden.Assert(t, filepath.Join("testdata", "crds-status-before.txt"), []byte(status(t, bare)))

	w.Take()
	report, err := crdlifecycle.Apply(ctx, c, crdlifecycle.ApplyOptions{Alpha2: true})
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "apply-first.txt"), []byte(report.String()))
	gie, err := crds.Load(crds.GIE)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Take(); len(got) != len(gie)-1 {
		t.Errorf("the first apply should write the %d missing CRDs (every GIE CRD but the foreign one), wrote %v", len(gie)-1, got)
	}
	if skipped := report.Skipped(); len(skipped) != 1 || skipped[0].Name != crdlifecycle.Alpha2PoolCRD || skipped[0].Live != "v1.5.0" {
		t.Errorf("the newer v1alpha2 CRD should be the one skipped, got %+v", skipped)
	}
	// The API server writes each new CRD's status (NamesAccepted, then
	// Established) after the create: wait for all of them, or that write
	// lands inside the next subtest's window.
	for _, crd := range gie {
		waitEstablished(t, c, crd.Name)
	}

	t.Run("apply twice writes nothing", func(t *testing.T) {
		before := resourceVersions(t, c)
		w.Take()
		for range 3 {
			report, err := crdlifecycle.Apply(ctx, c, crdlifecycle.ApplyOptions{Alpha2: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range report.Results {
				if r.Action == crdlifecycle.ActionApplied {
					t.Errorf("%s applied again: %s", r.Name, r.Reason)
				}
			}
		}
		if got := w.Take(); len(got) != 0 {
			t.Errorf("applying unchanged CRDs made write requests: %v", got)
		}
		if after := resourceVersions(t, c); !equalMaps(before, after) {
			t.Errorf("resource versions changed: %v -> %v", before, after)
		}
	})

	t.Run("a newer live CRD is not downgraded", func(t *testing.T) {
		newer := loadCRD(t, v1PoolCRD)
		newer.Annotations[crdlifecycle.AnnotationBundleVersion] = "v1.5.0-rc.2"
		newer.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "from GIE v1.5.0-rc.2"
		applyAs(t, c, newer, "gie-installer")
		rv := get(t, c, v1PoolCRD).ResourceVersion
		w.Take()
		report, err := crdlifecycle.Apply(ctx, c, crdlifecycle.ApplyOptions{Alpha2: true})
		if err != nil {
			t.Fatal(err)
		}
		res := result(t, report, v1PoolCRD)
		if res.Action != crdlifecycle.ActionSkipped || !strings.Contains(res.Reason, "newer than ours (v1.3.1)") {
			t.Errorf("got %+v", res)
		}
		if got := w.Take(); len(got) != 0 {
			t.Errorf("wrote to a newer CRD: %v", got)
		}
		live := get(t, c, v1PoolCRD)
		if live.ResourceVersion != rv || live.Spec.Versions[0].Schema.OpenAPIV3Schema.Description != "from GIE v1.5.0-rc.2" {
			t.Error("the newer CRD changed")
		}
	})

	t.Run("an older live CRD is upgraded", func(t *testing.T) {
		older := loadCRD(t, v1PoolCRD)
		older.Annotations[crdlifecycle.AnnotationBundleVersion] = "v1.0.0"
		older.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "from GIE v1.0.0"
		applyAs(t, c, older, "gie-installer")
		report, err := crdlifecycle.Apply(ctx, c, crdlifecycle.ApplyOptions{Alpha2: true})
		if err != nil {
			t.Fatal(err)
		}
		if res := result(t, report, v1PoolCRD); res.Action != crdlifecycle.ActionApplied || res.Reason != "upgraded from bundle version v1.0.0" {
			t.Errorf("got %+v", res)
		}
		live := get(t, c, v1PoolCRD)
		want := loadCRD(t, v1PoolCRD)
		if live.Annotations[crdlifecycle.AnnotationBundleVersion] != "v1.3.1" ||
			live.Spec.Versions[0].Schema.OpenAPIV3Schema.Description != want.Spec.Versions[0].Schema.OpenAPIV3Schema.Description {
			t.Error("the older CRD was not replaced by ours")
		}
		if live.Labels[convention.LabelManagedBy] != convention.ManagedBy {
			t.Error("our label is missing")
		}
	})

	t.Run("a changed field is put back", func(t *testing.T) {
		live := get(t, c, objectivesCRD)
		live.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "edited by hand"
		if err := c.Update(ctx, live); err != nil {
			t.Fatal(err)
		}
		report, err := crdlifecycle.Apply(ctx, c, crdlifecycle.ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res := result(t, report, objectivesCRD); res.Action != crdlifecycle.ActionApplied || res.Reason != "differs from ours" {
			t.Errorf("got %+v", res)
		}
		if res := result(t, report, crdlifecycle.Alpha2PoolCRD); res.Action != crdlifecycle.ActionSkipped || !strings.Contains(res.Reason, "no service needs") {
			t.Errorf("without Alpha2 the v1alpha2 CRD is left alone; got %+v", res)
		}
		if d := get(t, c, objectivesCRD).Spec.Versions[0].Schema.OpenAPIV3Schema.Description; d == "edited by hand" {
			t.Error("the hand edit survived")
		}
	})

	golden.Assert(t, filepath.Join("testdata", "crds-status-applied.txt"), []byte(status(t, bare)))

	t.Run("remove refuses while custom resources are left", func(t *testing.T) {
		// A fixed name (the control plane is this test's own): the golden
		// refusal names it.
		ns := "team-a"
		testenv.EnsureNamespace(t, c, ns)
		for i := range 11 {
			pool := &gieapiv1.InferencePool{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pool-%02d", i), Namespace: ns},
				Spec: gieapiv1.InferencePoolSpec{
					Selector:          gieapiv1.LabelSelector{MatchLabels: map[gieapiv1.LabelKey]gieapiv1.LabelValue{"app": "llm"}},
					TargetPorts:       []gieapiv1.Port{{Number: 8000}},
					EndpointPickerRef: gieapiv1.EndpointPickerRef{Name: "epp", Port: &gieapiv1.Port{Number: 9002}},
				},
			}
			if err := c.Create(ctx, pool); err != nil {
				t.Fatal(err)
			}
		}
		preset := &v1alpha2.LLMInferenceServiceConfig{ObjectMeta: metav1.ObjectMeta{Name: "team-preset", Namespace: ns}}
		if err := c.Create(ctx, preset); err != nil {
			t.Fatal(err)
		}

		_, err := crdlifecycle.Remove(ctx, c)
		var left *crdlifecycle.LeftError
		if !errors.As(err, &left) || len(left.Left) != 12 {
			t.Fatalf("want a refusal naming 12 custom resources, got %v", err)
		}
		stdout, stderr, code := run(t, bare, "crds", "remove")
		if code != 1 || stdout != "" {
			t.Errorf("crds remove: exit %d, stdout %q", code, stdout)
		}
		golden.Assert(t, filepath.Join("testdata", "crds-remove-refused.txt"), []byte(stderr))
		for _, name := range []string{v1PoolCRD, objectivesCRD, "llminferenceserviceconfigs.serving.kserve.io"} {
			get(t, c, name) // still there
		}
		var pools gieapiv1.InferencePoolList
		if err := c.List(ctx, &pools, client.InNamespace(ns)); err != nil || len(pools.Items) != 11 {
			t.Errorf("pools after the refusal: %d, %v", len(pools.Items), err)
		}

		if err := c.DeleteAllOf(ctx, &gieapiv1.InferencePool{}, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, preset); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("remove deletes our CRDs once nothing is left", func(t *testing.T) {
		stdout, stderr, code := run(t, bare, "crds", "remove")
		if code != 0 {
			t.Fatalf("crds remove: exit %d: %s", code, stderr)
		}
		golden.Assert(t, filepath.Join("testdata", "crds-remove.txt"), []byte(stdout))
		for _, name := range []string{v1PoolCRD, objectivesCRD, "llminferenceservices.serving.kserve.io", "llminferenceserviceconfigs.serving.kserve.io"} {
			waitGone(t, c, name)
		}
		get(t, c, crdlifecycle.Alpha2PoolCRD)             // foreign: left alone
		get(t, c, "httproutes.gateway.networking.k8s.io") // not ours at all
		golden.Assert(t, filepath.Join("testdata", "crds-status-removed.txt"), []byte(status(t, bare)))
	})
}

// withoutGIE makes the package's control plane what TestCRDLifecycle
// starts from, a cluster before odh-serving installed anything: no GIE CRD,
// and the serving CRDs with no custom resource and no field manager but
// their creator's. It deletes the serving and GIE CRDs (and with them the
// other tests' services and pools) and recreates the serving ones as they
// were. When the test ends it deletes what the test left of these CRDs and
// puts every one back as it was, for the package's other tests. A control
// plane of the test's own would cost a kube-apiserver start (about 7 s of
// CPU).
func withoutGIE(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	serving, err := crds.Load(crds.Serving)
	if err != nil {
		t.Fatal(err)
	}
	gie, err := crds.Load(crds.GIE)
	if err != nil {
		t.Fatal(err)
	}
	var saved []*apiextensionsv1.CustomResourceDefinition
	for _, want := range append(serving, gie...) {
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: want.Name}, live); err != nil {
			t.Fatalf("get CRD %s: %v", want.Name, err)
		}
		// As created: envtest's conversion webhook in the spec, no status.
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: live.Name, Labels: live.Labels, Annotations: live.Annotations},
			Spec:       live.Spec,
		}
		saved = append(saved, crd)
	}
	deleteCRDs := func(names ...string) {
		for _, name := range names {
			storageReady(t, cp.Client, name)
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := cp.Client.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("delete CRD %s: %v", name, err)
			}
		}
		for _, name := range names {
			waitGone(t, cp.Client, name)
		}
	}
	createCRDs := func(defs []*apiextensionsv1.CustomResourceDefinition) {
		for _, crd := range defs {
			// As kubectl create would: a field manager of its own, not
			// client-go's default (this test binary's name), which would
			// put how the binary was built into the goldens.
			if err := cp.Client.Create(ctx, crd.DeepCopy(), client.FieldOwner(crdCreator)); err != nil {
				t.Fatalf("create CRD %s: %v", crd.Name, err)
			}
		}
		for _, crd := range defs {
			waitEstablished(t, cp.Client, crd.Name)
		}
	}
	names := make([]string, len(saved))
	for i, crd := range saved {
		names[i] = crd.Name
	}
	t.Cleanup(func() {
		deleteCRDs(names...)
		createCRDs(saved)
	})
	deleteCRDs(names...)
	createCRDs(saved[:len(serving)])
	return cp
}

// status is the output of `odh-serving crds status`.
func status(t *testing.T, on *controlplane.ControlPlane) string {
	t.Helper()
	stdout, stderr, code := run(t, on, "crds", "status")
	if code != 0 {
		t.Fatalf("crds status: exit %d: %s", code, stderr)
	}
	return stdout
}

// loadCRD is an embedded CRD as its upstream ships it (no label of ours).
func loadCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	all, err := crds.Load(crds.GIE)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(all, func(c *apiextensionsv1.CustomResourceDefinition) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no embedded CRD %s", name)
	}
	return all[i]
}

// applyAs server-side applies a CRD as another field manager would.
func applyAs(t *testing.T, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, manager string) {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	if err := c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatalf("apply %s as %s: %v", crd.Name, manager, err)
	}
}

func get(t *testing.T, c client.Client, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatalf("get CRD %s: %v", name, err)
	}
	return crd
}

func result(t *testing.T, r crdlifecycle.Report, name string) crdlifecycle.Result {
	t.Helper()
	for _, res := range r.Results {
		if res.Name == name {
			return res
		}
	}
	t.Fatalf("no result for %s in\n%s", name, r)
	return crdlifecycle.Result{}
}

func resourceVersions(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, crd := range list.Items {
		out[crd.Name] = crd.ResourceVersion
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func waitEstablished(t *testing.T, c client.Client, name string) {
	t.Helper()
	testenv.Eventually(t, "CRD "+name+" established", func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(context.WithoutCancel(t.Context()), client.ObjectKey{Name: name}, crd); err != nil {
			return err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", crd.Status.Conditions)
	})
}

// storageReady waits until the API server serves lists of CRD name's
// kind, unless the CRD is absent. A CRD deleted before that (a second
// after it was made, which this package does) stays for up to minutes:
// the API server's CRD finalizer cannot list its instances yet ("could
// not list instances: storage is (re)initializing") and retries with a
// backoff that doubles from 5 ms to 1000 s. Seen as TestCRDLifecycle
// failing 3 runs in 8, run alone beside a CPU hog.
func storageReady(t *testing.T, c client.Client, name string) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return
		}
		t.Fatalf("get CRD %s: %v", name, err)
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Served })
	if i < 0 {
		return // nothing served, nothing to list
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(crd.Spec.Group + "/" + crd.Spec.Versions[i].Name)
	list.SetKind(crd.Spec.Names.ListKind)
	testenv.Eventually(t, "the API server lists "+name+"'s kind", func() error {
		return c.List(ctx, list, client.Limit(1))
	})
}

func waitGone(t *testing.T, c client.Client, name string) {
	t.Helper()
	testenv.Eventually(t, "CRD "+name+" deleted", func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(context.WithoutCancel(t.Context()), client.ObjectKey{Name: name}, crd)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("get: %w", err)
		}
		// The API server's CRD finalizer says in the Terminating condition
		// why it has not removed the CRD yet (it retries with a backoff
		// that grows to minutes).
		return fmt.Errorf("still there: finalizers %v, conditions %+v", crd.Finalizers, crd.Status.Conditions)
	})
}
