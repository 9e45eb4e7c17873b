package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func readObject(t *testing.T, file, namespace string) *unstructured.Unstructured {
	t.Helper()
	data := golden.Read(t, file)
	u := decodeYAML(t, data)
	u.SetNamespace(namespace)
	return u
}

// decodeYAML decodes one object as the API machinery does, with integers as
// int64, so that it compares equal to what the API server returns.
func decodeYAML(t *testing.T, data []byte) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return u
}

// get reads name in namespace as the given version of kind.
func get(t *testing.T, version, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "serving.kserve.io", Version: version, Kind: kind})
	if err := cp.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatalf("get %s %s/%s as %s: %v", kind, namespace, name, version, err)
	}
	return u
}

func spec(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	s, ok, err := unstructured.NestedMap(u.Object, "spec")
	if err != nil || !ok {
		t.Fatalf("%s has no spec: %v", u.GetName(), err)
	}
	return s
}

// TestIntegrationKServeManifestsApply creates KServe-style manifests, in the
// version they are written in, and reads each back in both versions.
func TestIntegrationKServeManifestsApply(t *testing.T) {
	files := golden.Glob(t, "testdata/kserve/*.yaml")
	ns := testenv.NewNamespace(t, cp.Client, "it")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			obj := readObject(t, file, ns)
			want := spec(t, obj)
			if err := cp.Client.Create(t.Context(), obj); err != nil {
				t.Fatalf("create: %v", err)
			}
			written := obj.GroupVersionKind().Version
			back := get(t, written, obj.GetKind(), ns, obj.GetName())
			if diff := cmp.Diff(want, spec(t, back)); diff != "" {
				t.Errorf("read back as %s (-written +read):\n%s", written, diff)
			}
			other := map[string]string{"v1alpha1": "v1alpha2", "v1alpha2": "v1alpha1"}[written]
			get(t, other, obj.GetKind(), ns, obj.GetName())
		})
	}
}

// TestIntegrationConversionV1alpha1ToV1alpha2 writes v1alpha1 and checks the
// stored v1alpha2 form field by field.
func TestIntegrationConversionV1alpha1ToV1alpha2(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "it")
	obj := readObject(t, "testdata/kserve/prefill-decode.yaml", ns)
	if err := cp.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("create: %v", err)
	}
	hub := &v1alpha2.LLMInferenceService{}
	if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), hub); err != nil {
		t.Fatal(err)
	}
	if got := hub.Annotations[v1alpha1.AnnotationCriticality]; got != "Critical" {
		t.Errorf("v1alpha2 annotation %s = %q, want Critical", v1alpha1.AnnotationCriticality, got)
	}
	pool := hub.Spec.Router.Scheduler.Pool.Spec
	wantPool := &v1alpha2.PoolSpec{
		Selector:    &v1alpha2.PoolSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "llama-pd"}},
		TargetPorts: []v1alpha2.PoolPort{{Number: 8000}},
		EndpointPickerRef: &v1alpha2.EndpointPickerRef{
			Kind: ptrTo("Service"), Name: "llama-pd-epp-service", Port: &v1alpha2.PoolPort{Number: 9002}, FailureMode: ptrTo("FailOpen"),
		},
	}
	if diff := cmp.Diff(wantPool, pool); diff != "" {
		t.Errorf("v1alpha2 pool spec (-want +got):\n%s", diff)
	}
	spoke := &v1alpha1.LLMInferenceService{}
	if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), spoke); err != nil {
		t.Fatal(err)
	}
	if _, ok := spoke.Annotations[v1alpha1.AnnotationCriticality]; ok || spoke.Spec.Model.Criticality == nil || *spoke.Spec.Model.Criticality != v1alpha1.Critical {
		t.Errorf("v1alpha1 must show criticality in the spec only; annotations %v, criticality %v", spoke.Annotations, spoke.Spec.Model.Criticality)
	}
}

// TestIntegrationConversionKeepsV1alpha2OnlyFields writes a v1alpha2 pool
// with three target ports, edits the object through v1alpha1, and checks that
// the ports survive.
func TestIntegrationConversionKeepsV1alpha2OnlyFields(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "it")
	hub := &v1alpha2.LLMInferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "multi-port", Namespace: ns},
		Spec: v1alpha2.LLMInferenceServiceSpec{Router: &v1alpha2.RouterSpec{Scheduler: &v1alpha2.SchedulerSpec{Pool: &v1alpha2.InferencePoolSpec{Spec: &v1alpha2.PoolSpec{
			Selector:    &v1alpha2.PoolSelector{MatchLabels: map[string]string{"app": "x"}},
			TargetPorts: []v1alpha2.PoolPort{{Number: 8000}, {Number: 8001}, {Number: 8002}},
		}}}}},
	}
	if err := cp.Client.Create(t.Context(), hub); err != nil {
		t.Fatalf("create: %v", err)
	}
	spoke := &v1alpha1.LLMInferenceService{}
	if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(hub), spoke); err != nil {
		t.Fatal(err)
	}
	spoke.Labels = map[string]string{"edited-through": "v1alpha1"}
	if err := cp.Client.Update(t.Context(), spoke); err != nil {
		t.Fatalf("update through v1alpha1: %v", err)
	}
	after := &v1alpha2.LLMInferenceService{}
	if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(hub), after); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(hub.Spec, after.Spec); diff != "" {
		t.Errorf("spec after a v1alpha1 edit (-before +after):\n%s", diff)
	}
	if after.Labels["edited-through"] != "v1alpha1" {
		t.Errorf("the v1alpha1 edit was lost: labels %v", after.Labels)
	}
	if _, ok := after.Annotations[v1alpha1.AnnotationConversionPoolSpec]; ok {
		t.Error("the conversion stash must not be stored")
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestIntegrationWebhookRejects sends every rule's violation through the API
// server, in the version each case names, and checks the message and that
// nothing was created.
func TestIntegrationWebhookRejects(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "it")
	// Each case is an object of kind in serving.kserve.io/version, with body
	// below apiVersion and kind.
	tests := map[string]struct {
		version, kind, body string
		want                string
	}{
		"route refs with route spec": {
			version: "v1alpha2", kind: "LLMInferenceService", body: "spec: {router: {route: {http: {refs: [{name: mine}], spec: {rules: [{}]}}}}}",
			want: "spec.router.route.http.spec: Forbidden: set either route.http.refs (routes you manage) or route.http.spec (a managed route), not both",
		},
		"route refs with managed gateway (v1alpha1)": {
			version: "v1alpha1", kind: "LLMInferenceService", body: "spec: {router: {route: {http: {refs: [{name: mine}]}}, gateway: {}}}",
			want: "spec.router.gateway: Forbidden: a managed gateway ({}) cannot be combined with route.http.refs",
		},
		"parentRefs with gateway refs": {
			version: "v1alpha2", kind: "LLMInferenceService", body: "spec: {router: {route: {http: {spec: {parentRefs: [{name: gw}]}}}, gateway: {refs: [{name: gw, namespace: infra}]}}}",
			want: "spec.router.route.http.spec.parentRefs: Forbidden: set either route.http.spec.parentRefs or gateway.refs, not both",
		},
		"worker without parallelism": {
			version: "v1alpha1", kind: "LLMInferenceService", body: "spec: {worker: {containers: [{name: main}]}}",
			want: "spec.parallelism: Required value: a worker needs data parallelism (data and dataLocal) or pipeline parallelism (pipeline)",
		},
		"pipeline with data": {
			version: "v1alpha2", kind: "LLMInferenceService", body: "spec: {prefill: {parallelism: {pipeline: 2, data: 4, dataLocal: 2}}}",
			want: "spec.prefill.parallelism.pipeline: Forbidden: pipeline parallelism cannot be combined with data parallelism",
		},
		"data without dataLocal": {
			version: "v1alpha2", kind: "LLMInferenceService", body: "spec: {parallelism: {data: 4}}",
			want: "spec.parallelism.dataLocal: Required value: data and dataLocal must be set together",
		},
		"zero tensor": {
			version: "v1alpha1", kind: "LLMInferenceService", body: "spec: {parallelism: {tensor: 0}}",
			want: "spec.parallelism.tensor: Invalid value: 0: must be greater than 0",
		},
		"rpc port out of range": {
			version: "v1alpha2", kind: "LLMInferenceService", body: "spec: {parallelism: {data: 4, dataLocal: 2, dataRPCPort: 0}}",
			want: "spec.parallelism.dataRPCPort: Invalid value: 0: must be a port number between 1 and 65535",
		},
		"config with baseRefs (v1alpha1)": {
			version: "v1alpha1", kind: "LLMInferenceServiceConfig", body: "spec: {baseRefs: [{name: other}]}",
			want: "spec.baseRefs: Forbidden: an LLMInferenceServiceConfig may not reference other configs",
		},
		"unknown field in a partial pod spec": {
			version: "v1alpha1", kind: "LLMInferenceService", body: "spec: {template: {containers: [{name: main, imagee: vllm}]}}",
			want: "spec.template.containers[0].imagee: Forbidden: unknown field",
		},
		"wrong type in a preset pod spec": {
			version: "v1alpha2", kind: "LLMInferenceServiceConfig", body: "spec: {prefill: {template: {containers: [{name: main, ports: [{containerPort: http}]}]}}}",
			want: `spec.prefill.template.containers[0].ports[0].containerPort: Invalid value: "http": must be of type int32, not string`,
		},
		"criticality annotation on v1alpha1": {
			version: "v1alpha1", kind: "LLMInferenceService", body: "metadata: {annotations: {serving.kserve.io/criticality: Critical}}\nspec: {}",
			want: "metadata.annotations[serving.kserve.io/criticality]: Forbidden: in v1alpha1 set spec.model.criticality instead",
		},
	}
	i := 0
	for name, tc := range tests {
		i++
		t.Run(name, func(t *testing.T) {
			u := decodeYAML(t, []byte("apiVersion: serving.kserve.io/"+tc.version+"\nkind: "+tc.kind+"\n"+tc.body))
			u.SetNamespace(ns)
			u.SetName(strings.ReplaceAll(strings.ToLower(strings.Fields(name)[0]), "_", "-") + "-" + string(rune('a'+i)))
			err := cp.Client.Create(t.Context(), u)
			if err == nil {
				t.Fatalf("created; want rejection %q", tc.want)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant Invalid containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), u.GetName()) {
				t.Errorf("error %q does not name the object %q", err, u.GetName())
			}
			check := &unstructured.Unstructured{}
			check.SetGroupVersionKind(u.GroupVersionKind())
			if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(u), check); !apierrors.IsNotFound(err) {
				t.Errorf("a rejected object must not exist; get returned %v", err)
			}
		})
	}
}

// TestIntegrationWebhookRejectsGroupResize checks the update rule: the size of
// a multi-node group cannot change, while other edits go through.
func TestIntegrationWebhookRejectsGroupResize(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "it")
	svc := &v1alpha2.LLMInferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "dp", Namespace: ns},
		Spec: v1alpha2.LLMInferenceServiceSpec{WorkloadSpec: v1alpha2.WorkloadSpec{
			Parallelism: &v1alpha2.ParallelismSpec{Data: ptrTo[int32](16), DataLocal: ptrTo[int32](8)},
			Worker:      &corev1.PodSpec{},
		}},
	}
	if err := cp.Client.Create(t.Context(), svc); err != nil {
		t.Fatalf("create: %v", err)
	}
	svc.Spec.Replicas = ptrTo[int32](3)
	if err := cp.Client.Update(t.Context(), svc); err != nil {
		t.Fatalf("an update that keeps the group size must pass: %v", err)
	}
	svc.Spec.Parallelism.Data = ptrTo[int32](32)
	err := cp.Client.Update(t.Context(), svc)
	want := "spec.parallelism: Invalid value: 4: the multi-node group size may not change (was 2)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want %q", err, want)
	}
}
