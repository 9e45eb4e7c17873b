package controllertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/cli"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestStatusCommand prints services whose status is written here (no
// controller runs for these namespaces, whose names are fixed so the
// output is).
func TestStatusCommand(t *testing.T) {
	ctx := context.Background()
	for _, ns := range []string{"status-cli-a", "status-cli-b"} {
		testenv.EnsureNamespace(t, cp.Client, ns)
	}
	ready := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, LastTransitionTime: metav1.Now()}}
	}
	for _, s := range []struct {
		ns, name string
		status   v1alpha2.LLMInferenceServiceStatus
	}{
		{"status-cli-a", "qwen", v1alpha2.LLMInferenceServiceStatus{
			Conditions:    ready(metav1.ConditionTrue, "Ready"),
			URL:           "http://gw.example.com/status-cli-a/qwen",
			InferencePool: &v1alpha2.InferencePoolStatus{Name: "qwen-inference-pool", Group: "inference.networking.k8s.io", MigrationPhase: "v1"},
			Autoscalers: []v1alpha2.AutoscalerStatus{
				{Kind: "HorizontalPodAutoscaler", Name: "qwen-hpa", Target: v1alpha2.ScaleTarget{Kind: "Deployment", Name: "qwen-kserve"}, CurrentReplicas: ptr(int32(3)), DesiredReplicas: ptr(int32(5))},
				{Kind: "ScaledObject", Name: "qwen-kserve-prefill-keda", Target: v1alpha2.ScaleTarget{Kind: "Deployment", Name: "qwen-kserve-prefill"}},
			},
		}},
		{"status-cli-a", "llama", v1alpha2.LLMInferenceServiceStatus{
			Conditions:    ready(metav1.ConditionFalse, "InferencePoolNotReady"),
			InferencePool: &v1alpha2.InferencePoolStatus{Name: "llama-inference-pool", Group: "inference.networking.x-k8s.io", MigrationPhase: "dual"},
		}},
		{"status-cli-a", "small", v1alpha2.LLMInferenceServiceStatus{
			Conditions: ready(metav1.ConditionFalse, "Stopped"),
		}},
		{"status-cli-b", "new", v1alpha2.LLMInferenceServiceStatus{}},
	} {
		svc := &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name}}
		svc.Spec.Model.Name = ptr("m")
		if err := cp.Client.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if err := cp.Client.Get(ctx, clientKey(s.ns, s.name), svc); err != nil {
			t.Fatal(err)
		}
		svc.Status = s.status
		if err := cp.Client.Status().Update(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}

	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := cli.Main(args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}); code != 0 {
			t.Fatalf("odh-serving %v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	kc := testenv.Kubeconfig(t, cp.Config, "status-cli-a")
	golden.Assert(t, "testdata/status-namespace.txt", []byte(run("status", "--kubeconfig", kc)))
	golden.Assert(t, "testdata/status-namespace-b.txt", []byte(run("status", "--kubeconfig", kc, "-n", "status-cli-b")))
	// Other tests' services are in the list too, and widen its columns:
	// keep the header and our rows, and align them again as the command
	// does.
	var kept bytes.Buffer
	w := tabwriter.NewWriter(&kept, 0, 8, 3, ' ', 0)
	for i, line := range strings.Split(run("status", "--kubeconfig", kc, "-A"), "\n") {
		if i == 0 || strings.HasPrefix(line, "status-cli-") {
			fmt.Fprintln(w, strings.Join(strings.Fields(line), "\t"))
		}
	}
	e := w.Flush()
	if e != nil {
		t.Fatal(e)
	}
	golden.Assert(t, "testdata/status-all.txt", kept.Bytes())
}

// TestUnimplementedFieldsInCondition creates a service with KServe fields
// the controller stores but does not act on (runtime) and one it does
// (tracing): PresetsCombined stays True and names the first in its
// message, and the model server is started with tracing.
func TestUnimplementedFieldsInCondition(t *testing.T) {
	e := start(t)
	e.create(simService("kfields", "") + "  runtime: vllm-cuda\n  tracing: {}\n")
	svc := e.waitCondition("kfields", v1alpha2.ConditionPresetsCombined, metav1.ConditionTrue, "")
	if c := cond(svc, v1alpha2.ConditionPresetsCombined); !strings.Contains(c.Message, "spec.runtime is accepted and stored but not acted on") {
		t.Errorf("PresetsCombined message %q, want it to name spec.runtime", c.Message)
	}
	e.waitExists(deployment, "kfields-kserve")
	d := &appsv1.Deployment{}
	e.must(e.c.Get(context.Background(), clientKey(e.ns, "kfields-kserve"), d))
	main := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "main" })
	if main < 0 || !slices.Contains(d.Spec.Template.Spec.Containers[main].Args, "--otlp-traces-endpoint") {
		t.Errorf("containers %+v, want main with --otlp-traces-endpoint", d.Spec.Template.Spec.Containers)
	}
}

// TestKServeStatusFields: the controller fills status.appliedConfigs with
// the presets it merged, as KServe does (well-known ones as Preset, then the
// baseRefs as UserRef), and
// drops the status fields KServe's controller writes and ours does not
// (router, workloads) when a service carries them, e.g. after a move from
// KServe.
func TestKServeStatusFields(t *testing.T) {
	e := start(t)
	e.create(simService("kstatus", ""))
	var svc *v1alpha2.LLMInferenceService
	testenv.Eventually(t, "the service lists its presets", func() error {
		svc = e.service("kstatus")
		if len(svc.Status.AppliedConfigs) == 0 {
			return fmt.Errorf("status.appliedConfigs is empty")
		}
		return nil
	})
	// simService names the CPU simulator preset in its baseRefs.
	var got []string
	for _, a := range svc.Status.AppliedConfigs {
		got = append(got, a.Source+" "+a.Name)
		if a.Namespace == "" {
			t.Errorf("status.appliedConfigs %s: a preset without a namespace", toJSON(svc.Status.AppliedConfigs))
		}
	}
	if want := []string{"Preset kserve-config-llm-template", "UserRef kserve-config-llm-cpu-simulator"}; !slices.Equal(got, want) {
		t.Errorf("status.appliedConfigs %s, want %q in that order", toJSON(svc.Status.AppliedConfigs), want)
	}
	for {
		svc.Status.Router = &v1alpha2.RouterStatus{Group: &v1alpha2.GroupStatus{Name: "from-kserve"}}
		svc.Status.Workloads = &v1alpha2.WorkloadStatus{Primary: &v1alpha2.ObservedWorkload{ReadyReplicas: ptr(int32(3))}}
		err := e.c.Status().Update(context.Background(), svc)
		if !apierrors.IsConflict(err) {
			e.must(err)
			break
		}
		svc = e.service("kstatus")
	}
	e.update("kstatus", func(s *v1alpha2.LLMInferenceService) { s.Annotations = map[string]string{"example.com/touch": "1"} })
	testenv.Eventually(t, "the controller drops KServe's router and writes its own workloads", func() error {
		st := e.service("kstatus").Status
		if w := st.Workloads; st.Router != nil || w == nil || w.Primary == nil || w.Primary.Kind != "Deployment" || w.Primary.Name != "kstatus-kserve" ||
			w.Primary.ReadyReplicas == nil || w.Service == nil || w.Service.Name != "kstatus-kserve-workload-svc" || w.Prefill != nil {
			return fmt.Errorf("status.router %s, status.workloads %s", toJSON(st.Router), toJSON(st.Workloads))
		}
		return nil
	})
}

// statusConflicts lists the status writes to services that the API server
// answered 409 Conflict, from the recorder's nth write on.
func (e *env) statusConflicts(n int) []string {
	var out []string
	for _, w := range e.rec.Writes(n) {
		if w.Code == http.StatusConflict && strings.Contains(w.Path, "/llminferenceservices/") && strings.HasSuffix(w.Path, "/status") {
			out = append(out, w.String())
		}
	}
	return out
}

// reconcileErrors is how many reconciles of the service controller in this
// process returned an error (each is a "Reconciler error" log line).
func reconcileErrors(t *testing.T) float64 {
	t.Helper()
	return counterBy(t, "controller_runtime_reconcile_errors_total", "controller")[controller.ControllerName]
}

// TestStatusWritesDoNotConflict: services settling side by side, while
// the other controllers' statuses come in, have their status written
// without one optimistic-lock conflict, and no reconcile fails. The
// controller's watch of the services lags, as on a loaded machine (300 runs
// against the demo cluster logged 44 conflicts). Conflicts came from the
// controller's own writes: a child's event reconciled a service right after
// its status was written, from a cache that had not seen that write, and
// the next status patch carried the old resourceVersion.
func TestStatusWritesDoNotConflict(t *testing.T) {
	const n = 12
	e := newEnv(t, func(o *controller.Options) { o.MaxConcurrentReconciles = 4 })
	e.wrap = lagWatch("/llminferenceservices", 300*time.Millisecond)
	e.run()
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	errorsBefore := reconcileErrors(t)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("sim-%02d", i)
		e.create(simService(names[i], managedRouter))
	}
	testenv.Eventually(t, "every service is Ready", func() error {
		e.simulate()
		return e.allReady()
	})
	if c := e.statusConflicts(0); len(c) > 0 {
		t.Errorf("%d status writes of %d services were answered 409 Conflict, want none:\n%s", len(c), n, strings.Join(c, "\n"))
	}
	if got := reconcileErrors(t) - errorsBefore; got != 0 {
		t.Errorf("%v reconciles failed, want 0", got)
	}
	// Each migration is as far as the route and pools take it.
	e.waitSettled(names...)
}

// lagWatch delays the events of the watches of the collections whose path
// ends in suffix by about lag: the stream is read at most once per lag.
func lagWatch(suffix string, lag time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err == nil && req.URL.Query().Get("watch") == "true" && strings.HasSuffix(req.URL.Path, suffix) {
				resp.Body = &slowBody{ReadCloser: resp.Body, lag: lag}
			}
			return resp, err
		})
	}
}

// slowBody waits lag before each read.
type slowBody struct {
	io.ReadCloser
	lag time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	time.Sleep(b.lag)
	return b.ReadCloser.Read(p)
}
