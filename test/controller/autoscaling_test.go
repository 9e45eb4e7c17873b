package controllertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// hpaManager is the field manager of the HPA controller's scale writes
// (kube-controller-manager's user agent).
const hpaManager = "kube-controller-manager"

// TestAutoscalerKeepsReplicas: an HPA put on a service's Deployment after
// the service made it takes spec.replicas over. The controller lets go of
// the field without resetting the count (server-side apply would drop a
// field its only manager stops applying), leaves the HPA's choice alone
// through 100 reconciles, and takes the field back when the HPA goes.
func TestAutoscalerKeepsReplicas(t *testing.T) {
	e := startWithGateway(t)
	e.create(strings.Replace(simulator, "spec:\n", "spec:\n  replicas: 2\n", 1))
	e.waitReady("sim")
	ctx := context.Background()
	d := &appsv1.Deployment{}
	e.must(e.c.Get(ctx, clientKey(e.ns, "sim-kserve"), d))
	if !appliesReplicas(d) || *d.Spec.Replicas != 2 {
		t.Fatalf("before the HPA: replicas %d, applied by odh-serving %v; want 2, true", *d.Spec.Replicas, appliesReplicas(d))
	}

	e.createHPA("sim-hpa", appsv1.SchemeGroupVersion.String(), "Deployment", "sim-kserve")
	testenv.Eventually(t, "the controller lets go of sim-kserve's replicas", func() error {
		e.must(e.c.Get(ctx, clientKey(e.ns, "sim-kserve"), d))
		if appliesReplicas(d) {
			return fmt.Errorf("odh-serving still applies spec.replicas")
		}
		return nil
	})
	// Not reset to the default of 1: nothing here would scale it back.
	if *d.Spec.Replicas != 2 {
		t.Fatalf("after the hand-over: replicas %d, want 2; %s", *d.Spec.Replicas, managers(d))
	}

	e.scale(&appsv1.Deployment{}, "sim-kserve", 5)
	e.hpaStatus("sim-hpa", 5, 5)
	want := v1alpha2.AutoscalerStatus{Kind: "HorizontalPodAutoscaler", Name: "sim-hpa", Target: v1alpha2.ScaleTarget{Kind: "Deployment", Name: "sim-kserve"},
		CurrentReplicas: ptr(int32(5)), DesiredReplicas: ptr(int32(5))}
	testenv.Eventually(t, "the service reports its HPA", func() error {
		if got := e.service("sim").Status.Autoscalers; len(got) != 1 || !equality.Semantic.DeepEqual(got[0], want) {
			return fmt.Errorf("status.autoscalers = %s", toJSON(got))
		}
		return nil
	})
	// 100 reconciles of ours, beside the real HPA controller's syncs: the
	// count stays the scale's.
	e.forceReconciles("sim", 100, "apps/v1", "deployments")
	e.must(e.c.Get(ctx, clientKey(e.ns, "sim-kserve"), d))
	if *d.Spec.Replicas != 5 || !updatesReplicas(d, hpaManager) || appliesReplicas(d) {
		t.Errorf("after 100 reconciles: replicas %d; want 5, owned by %s only: %s", *d.Spec.Replicas, hpaManager, managers(d))
	}

	// Without the HPA the spec scales the Deployment again.
	e.must(e.c.Delete(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "sim-hpa"}}))
	testenv.Eventually(t, "the spec's replicas come back", func() error {
		e.must(e.c.Get(ctx, clientKey(e.ns, "sim-kserve"), d))
		if *d.Spec.Replicas != 2 || !appliesReplicas(d) {
			return fmt.Errorf("replicas %d; managers %s", *d.Spec.Replicas, managers(d))
		}
		return nil
	})
}

// TestAutoscalerOfLeaderWorkerSet: an HPA on a LeaderWorkerSet (through
// its scale subresource) is respected as one on a Deployment, and with it
// in place from the start the controller never sets the replicas.
func TestAutoscalerOfLeaderWorkerSet(t *testing.T) {
	e := startWithGateway(t)
	e.createHPA("mn-hpa", lwsv1.GroupVersion.String(), "LeaderWorkerSet", "mn-kserve-mn")
	e.create(multiNode)
	e.waitExists(lws, "mn-kserve-mn")
	ctx := context.Background()
	l := &lwsv1.LeaderWorkerSet{}
	testenv.Eventually(t, "the LeaderWorkerSet's replicas are left to the HPA", func() error {
		e.must(e.c.Get(ctx, clientKey(e.ns, "mn-kserve-mn"), l))
		if appliesReplicas(l) {
			return fmt.Errorf("odh-serving applies spec.replicas")
		}
		return nil
	})
	e.scale(&lwsv1.LeaderWorkerSet{}, "mn-kserve-mn", 3)
	e.forceReconciles("mn", 10, "leaderworkerset.x-k8s.io/v1", "leaderworkersets")
	e.must(e.c.Get(ctx, clientKey(e.ns, "mn-kserve-mn"), l))
	if *l.Spec.Replicas != 3 {
		t.Errorf("LeaderWorkerSet replicas %d after the reconciles, want 3: %s", *l.Spec.Replicas, managers(l))
	}
}

// createHPA makes an HPA on the workload apiVersion/kind/name.
func (e *env) createHPA(name, apiVersion, kind, target string) {
	e.t.Helper()
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: target},
			MinReplicas:    ptr(int32(1)), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(80))},
			}}},
		},
	}
	e.must(e.c.Create(context.Background(), hpa))
}

// hpaStatus writes an HPA's status as the HPA controller does once it has
// decided. The real one runs too (kube-controller-manager) but, with no
// metrics API, decides nothing: it reports the current count and keeps the
// desired one. So a test writes a current count the real one agrees with,
// and a conflict with its writes is retried on what it wrote.
func (e *env) hpaStatus(name string, current, desired int32) {
	e.t.Helper()
	e.must(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := e.c.Get(context.Background(), clientKey(e.ns, name), hpa); err != nil {
			return err
		}
		hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas, hpa.Status.LastScaleTime = current, desired, ptr(metav1.Now())
		return e.c.Status().Update(context.Background(), hpa)
	}))
}

func toJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// scale writes a workload's replicas as the HPA controller does: through
// the scale subresource, as kube-controller-manager. The scale carries the
// workload's resourceVersion, which kube-controller-manager moves when it
// writes a Deployment's status: a conflict is read again and retried.
func (e *env) scale(obj client.Object, name string, replicas int32) {
	e.t.Helper()
	ctx := context.Background()
	e.must(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.c.Get(ctx, clientKey(e.ns, name), obj); err != nil {
			return err
		}
		s := &autoscalingv1.Scale{}
		if err := e.c.SubResource("scale").Get(ctx, obj, s); err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		return e.c.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(s), client.FieldOwner(hpaManager))
	}))
}

// forceReconciles makes the controller reconcile the service n times, one
// after the other (a touched annotation each time), and fails if any of
// them wrote to the workloads of group version gv and resource.
func (e *env) forceReconciles(name string, n int, gv, resource string) {
	e.t.Helper()
	before := e.rec.Count()
	for i := range n {
		done := reconciles(e.t)
		e.update(name, func(s *v1alpha2.LLMInferenceService) {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations["test.example.com/touch"] = strconv.Itoa(i)
		})
		// Polled closely: Within's interval would make this take seconds.
		for deadline := time.Now().Add(10 * time.Second); reconciles(e.t) <= done; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				e.t.Fatalf("reconcile %d of %s did not come", i+1, name)
			}
		}
	}
	prefix := "/apis/" + gv + "/namespaces/" + e.ns + "/" + resource + "/"
	for _, w := range e.rec.Since(before) {
		if strings.Contains(w, prefix) {
			e.t.Errorf("a forced reconcile wrote a workload: %s", w)
		}
	}
}

// appliesReplicas reports whether the controller applied obj's
// spec.replicas; updatesReplicas whether manager wrote it with an update
// (the scale subresource's writes count as the main resource's).
func appliesReplicas(obj client.Object) bool {
	return ownsReplicas(obj, convention.FieldManager, metav1.ManagedFieldsOperationApply)
}

func updatesReplicas(obj client.Object, manager string) bool {
	return ownsReplicas(obj, manager, metav1.ManagedFieldsOperationUpdate)
}

func ownsReplicas(obj client.Object, manager string, op metav1.ManagedFieldsOperationType) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager != manager || f.Operation != op || f.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(f.FieldsV1.Raw, &set) != nil {
			continue
		}
		if _, ok, _ := unstructured.NestedFieldNoCopy(set, "f:spec", "f:replicas"); ok {
			return true
		}
	}
	return false
}

// managers lists who owns obj's spec.replicas, for messages.
func managers(obj client.Object) string {
	var out []string
	for _, f := range obj.GetManagedFields() {
		for _, op := range []metav1.ManagedFieldsOperationType{metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate} {
			if f.Operation == op && ownsReplicas(obj, f.Manager, op) {
				out = append(out, f.Manager+" ("+string(op)+")")
			}
		}
	}
	return "spec.replicas owned by " + strings.Join(out, ", ")
}

// scaledManifest is a KServe manifest, v1alpha1 as KServe publishes it, of
// a CPU-simulator service with spec.scaling (YAML indented by four spaces)
// and, after it, more of the spec (indented by two).
func scaledManifest(name, scaling, rest string) string {
	return `
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata:
  name: ` + name + `
spec:
  model:
    uri: hf://Qwen/Qwen2.5-0.5B-Instruct
    name: Qwen/Qwen2.5-0.5B-Instruct
  baseRefs:
  - name: kserve-config-llm-cpu-simulator
  scaling:
` + scaling + rest
}

// kserveScaled scales through WVA and an HPA, behind a managed router.
var kserveScaled = scaledManifest("wva", `    minReplicas: 1
    maxReplicas: 4
    wva:
      variantCost: "5.0"
      hpa:
        behavior:
          scaleDown:
            stabilizationWindowSeconds: 300
`, `  router:
    route: {}
    gateway: {}
    scheduler: {}
`)

// kedaScaled scales its Deployment with KEDA directly, on a CPU trigger.
var kedaScaled = scaledManifest("keda", `    maxReplicas: 3
    keda:
      triggers:
      - type: cpu
        metricType: Utilization
        metadata:
          value: "70"
`, "")

// createManifest creates a YAML manifest as it is, in the env's namespace.
func (e *env) createManifest(doc string) *unstructured.Unstructured {
	e.t.Helper()
	u := &unstructured.Unstructured{}
	e.must(yaml.Unmarshal([]byte(doc), &u.Object))
	u.SetNamespace(e.ns)
	e.must(e.c.Create(context.Background(), u.DeepCopy()))
	return u
}

// TestKServeScalingManifest: KServe manifests with spec.scaling apply
// unchanged and get their actuators, owned by the service, with their
// workloads' replicas left to them. A ScaledObject reports the replicas of
// the HPA KEDA made for it (simulated here), which is not listed again.
func TestKServeScalingManifest(t *testing.T) {
	e := startWithGateway(t)
	ctx := context.Background()
	sent := e.createManifest(kserveScaled)
	e.createManifest(kedaScaled)

	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(sent.GroupVersionKind())
	e.must(e.c.Get(ctx, clientKey(e.ns, "wva"), got))
	// Compared as JSON: numbers decode as int64 from the API server, float64
	// from YAML.
	if g, w := toJSON(got.Object["spec"].(map[string]any)["scaling"]), toJSON(sent.Object["spec"].(map[string]any)["scaling"]); g != w {
		t.Errorf("spec.scaling read back as %s, sent %s", g, w)
	}

	e.waitExists(func() client.Object { return &autoscalingv2.HorizontalPodAutoscaler{} }, "wva-kserve-hpa")
	so := &unstructured.Unstructured{}
	so.SetGroupVersionKind(schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"})
	e.waitExists(func() client.Object { return so.DeepCopy() }, "keda-kserve-keda")
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	e.must(e.c.Get(ctx, clientKey(e.ns, "wva-kserve-hpa"), hpa))
	if ref := metav1.GetControllerOf(hpa); ref == nil || ref.Name != "wva" || hpa.Spec.ScaleTargetRef.Name != "wva-kserve" {
		t.Errorf("HPA controller %+v, target %+v; want the service, Deployment wva-kserve", ref, hpa.Spec.ScaleTargetRef)
	}
	for _, name := range []string{"wva-kserve", "keda-kserve"} {
		d := &appsv1.Deployment{}
		e.must(e.c.Get(ctx, clientKey(e.ns, name), d))
		if appliesReplicas(d) {
			t.Errorf("Deployment %s: odh-serving applies spec.replicas under an autoscaler", name)
		}
	}
	e.waitCondition("wva", controller.ConditionAutoscalersReady, metav1.ConditionTrue, "")

	// KEDA, simulated: its HPA for the ScaledObject, named in its status.
	e.must(e.c.Get(ctx, clientKey(e.ns, "keda-kserve-keda"), so))
	e.must(unstructured.SetNestedField(so.Object, "keda-hpa-keda-kserve-keda", "status", "hpaName"))
	e.must(e.c.Status().Update(ctx, so))
	kedaHPA := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "keda-hpa-keda-kserve-keda", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: so.GetName(), UID: so.GetUID(), Controller: ptr(true),
		}}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "keda-kserve"},
			MinReplicas:    ptr(int32(1)), MaxReplicas: 3,
		},
	}
	e.must(e.c.Create(ctx, kedaHPA))
	e.hpaStatus(kedaHPA.Name, 1, 3)
	want := []v1alpha2.AutoscalerStatus{{
		Kind: "ScaledObject", Name: "keda-kserve-keda", Target: v1alpha2.ScaleTarget{Kind: "Deployment", Name: "keda-kserve"},
		CurrentReplicas: ptr(int32(1)), DesiredReplicas: ptr(int32(3)),
	}}
	testenv.Eventually(t, "service keda reports its ScaledObject with its HPA's counts", func() error {
		if got := e.service("keda").Status.Autoscalers; !equality.Semantic.DeepEqual(got, want) {
			return fmt.Errorf("status.autoscalers = %s", toJSON(got))
		}
		return nil
	})
}

// TestKEDAAppearsAfterStart: without KEDA's CRD a service that asks for a
// ScaledObject runs without it and says so (AutoscalersReady False,
// CRDMissing); once the CRD is installed the controller watches
// ScaledObjects and applies it, with no restart.
func TestKEDAAppearsAfterStart(t *testing.T) {
	crd := removeCRD(t, crds.KEDA)
	e := start(t)
	e.createManifest(kedaScaled)
	svc := e.waitCondition("keda", controller.ConditionAutoscalersReady, metav1.ConditionFalse, "CRDMissing")
	if msg := cond(svc, controller.ConditionAutoscalersReady).Message; !strings.Contains(msg, crd.Name) || !strings.Contains(msg, "keda-kserve-keda") {
		t.Errorf("AutoscalersReady message %q names neither %s nor the ScaledObject", msg, crd.Name)
	}
	e.waitExists(deployment, "keda-kserve") // the service runs meanwhile, unscaled

	installCRD(t, crd)
	so := &unstructured.Unstructured{}
	so.SetGroupVersionKind(schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"})
	e.waitExists(func() client.Object { return so.DeepCopy() }, "keda-kserve-keda")
	e.waitCondition("keda", controller.ConditionAutoscalersReady, metav1.ConditionTrue, "")
}

// TestHPAInTheSameInstall: Helm installs a chart's HPA before the service
// it scales (custom resources come last), so the controller sees the
// autoscaler before it first makes the workload. The Deployment starts at
// the service's replicas, not at the default of one, and the controller
// then leaves the count to the HPA.
func TestHPAInTheSameInstall(t *testing.T) {
	e := startWithGateway(t)
	e.createHPA("sim-hpa", appsv1.SchemeGroupVersion.String(), "Deployment", "sim-kserve")
	e.create(strings.Replace(simulator, "spec:\n", "spec:\n  replicas: 2\n", 1))
	ctx := context.Background()
	d := &appsv1.Deployment{}
	testenv.Eventually(t, "the controller makes sim-kserve and leaves its replicas to the HPA", func() error {
		if err := e.c.Get(ctx, clientKey(e.ns, "sim-kserve"), d); err != nil {
			return err
		}
		if appliesReplicas(d) {
			return fmt.Errorf("odh-serving still applies spec.replicas")
		}
		return nil
	})
	if *d.Spec.Replicas != 2 {
		t.Errorf("sim-kserve has %d replicas, want the service's 2 until the HPA scales it; %s", *d.Spec.Replicas, managers(d))
	}
}
