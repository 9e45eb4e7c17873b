package security

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// The tokens a service carries in its env: one as a value, one in a Secret
// it refers to.
const (
	tokenValue  = "hf_valueTOKEN0c9d2e7f41a8b3"
	tokenSecret = "hf_secretTOKEN5e1f0a9c7d2b64"
	// tokenRotated replaces tokenValue once the service runs, so the
	// controller logs a difference (at V(1)) in the env.
	tokenRotated = "hf_rotatedTOKEN93b7c1e0d5f2a8"
)

// verbosity is the most verbose log level the check runs at: V(7).
// client-go logs whole request and response bodies from V(8) on
// (--zap-log-level=8), which hold every object the controller reads;
// docs/security.md says not to run a controller that way.
const verbosity = -7

// controllerLogs and logLevel are where and from which level the package's
// controllers log. controller-runtime takes the first logger it is given,
// and 30 s after its first log without one it takes a logger that
// discards, for good: set in init, before any test, the logger is the
// package's whatever the tests' order and speed. Until a test captures the
// logs (captureLogs), only errors are written.
var (
	controllerLogs = &testenv.Buffer{}
	logLevel       = uberzap.NewAtomicLevelAt(zapcore.ErrorLevel)
)

func init() {
	ctrl.SetLogger(zap.New(zap.WriteTo(controllerLogs), zap.UseDevMode(true), zap.Level(logLevel)))
}

// captureLogs empties controllerLogs and has the controllers log from level
// on until the test ends, and returns controllerLogs.
func captureLogs(t *testing.T, level zapcore.Level) *testenv.Buffer {
	t.Helper()
	controllerLogs.Reset()
	logLevel.SetLevel(level)
	t.Cleanup(func() {
		logLevel.SetLevel(zapcore.ErrorLevel)
		controllerLogs.Reset()
	})
	return controllerLogs
}

// TestSecretsStayOutOfLogsEventsStatus runs the controller at V(7) over
// services that carry a token in their env (as a value and as a
// secretKeyRef), two of which fail to render (one in the template that holds
// the token), and scans everything the
// controller emits: its log (and client-go's), the events in the namespace
// and the services' status.
func TestSecretsStayOutOfLogsEventsStatus(t *testing.T) {
	logs := captureLogs(t, verbosity)
	klog.SetLogger(ctrl.Log)
	ctx := t.Context()
	ns, sys := testenv.NewNamespace(t, cp.Client, "secrets"), testenv.NewNamespace(t, cp.Client, "secrets-sys")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hf-token", Namespace: ns},
		StringData: map[string]string{"token": tokenSecret},
	}
	if err := cp.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	env := fmt.Sprintf(`
      env:
      - {name: HF_TOKEN, value: %s}
      - name: HF_TOKEN_FROM_SECRET
        valueFrom: {secretKeyRef: {name: hf-token, key: token}}`, tokenValue)
	create(t, ns, `
metadata: {name: works}
spec:
  model: {uri: "hf://org/model"}
  router: {scheduler: {}, route: {}, gateway: {}}
  template:
    containers:
    - name: main`+env)
	create(t, ns, `
metadata: {name: fails}
spec:
  model: {uri: "gs://bucket/model"}
  template:
    containers:
    - name: main`+env)
	create(t, ns, fmt.Sprintf(`
metadata: {name: broken-template}
spec:
  model: {uri: "hf://org/model"}
  template:
    containers:
    - name: main
      env:
      - {name: HF_TOKEN, value: "{{ .Nope }}%s"}`, tokenValue))
	runController(t, controller.Options{
		Options: engine.Options{SystemNamespace: sys}, WatchNamespaces: []string{ns}, DisableWebhooks: true,
		MetricsBindAddress: "0", HealthProbeBindAddress: "0",
	})

	testenv.Within(t, time.Minute, "the working service's Deployment", func() error {
		return cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "works-kserve"}, &appsv1.Deployment{})
	})
	// The controller writes the service too (its status): retry the
	// edit on a conflict, as any client would.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rotate := &v1alpha2.LLMInferenceService{}
		if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "works"}, rotate); err != nil {
			return err
		}
		rotate.Spec.Template.Containers[0].Env[0].Value = tokenRotated
		return cp.Client.Update(ctx, rotate)
	})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Within(t, time.Minute, "the rotated token in the Deployment", func() error {
		d := &appsv1.Deployment{}
		if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "works-kserve"}, d); err != nil {
			return err
		}
		if data, _ := json.Marshal(d.Spec); !bytes.Contains(data, []byte(tokenRotated)) {
			return errors.New("not yet")
		}
		return nil
	})
	for name, failure := range map[string]string{"fails": "gs://bucket/model", "broken-template": "can't evaluate field Nope"} {
		testenv.Within(t, time.Minute, "the status of "+name, func() error {
			svc := &v1alpha2.LLMInferenceService{}
			if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
				return err
			}
			if !strings.Contains(statusJSON(t, svc), failure) {
				return errors.New("no condition names the failure yet")
			}
			return nil
		})
	}
	// Let a few more reconciles and their logs happen.
	time.Sleep(2 * time.Second)

	var emitted []struct{ what, text string }
	emitted = append(emitted, struct{ what, text string }{"the controller's log", logs.String()})
	for _, name := range []string{"works", "fails", "broken-template"} {
		svc := &v1alpha2.LLMInferenceService{}
		if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
			t.Fatal(err)
		}
		emitted = append(emitted, struct{ what, text string }{"the status of " + name, statusJSON(t, svc)})
	}
	var core corev1.EventList
	var modern eventsv1.EventList
	for _, list := range []client.ObjectList{&core, &modern} {
		if err := cp.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		emitted = append(emitted, struct{ what, text string }{fmt.Sprintf("the events in %s", ns), string(data)})
	}
	if len(logs.String()) < 1000 {
		t.Fatalf("the controller logged only %d bytes; is the logger wired?", len(logs.String()))
	}
	for _, e := range emitted {
		for _, token := range []string{tokenValue, tokenSecret, tokenRotated} {
			if i := strings.Index(e.text, token); i >= 0 {
				start := strings.LastIndex(e.text[:i], "\n") + 1
				t.Errorf("%s holds a token: %s...", e.what, e.text[start:min(len(e.text), start+300)])
			}
		}
	}
	if !strings.Contains(logs.String(), "applying a child that differs") {
		t.Error("the controller did not log the rotation's difference; the scan missed that path")
	}
}

func create(t *testing.T, ns, doc string) {
	t.Helper()
	svc := &v1alpha2.LLMInferenceService{}
	if err := yaml.UnmarshalStrict([]byte(doc), svc); err != nil {
		t.Fatal(err)
	}
	svc.Namespace = ns
	if err := cp.Client.Create(t.Context(), svc); err != nil {
		t.Fatalf("create %s: %v", svc.Name, err)
	}
}

func runController(t *testing.T, opts controller.Options) {
	t.Helper()
	testenv.Start(t, "controller", func(ctx context.Context) error { return controller.Run(ctx, cp.Config, opts) })
}

func statusJSON(t *testing.T, svc *v1alpha2.LLMInferenceService) string {
	t.Helper()
	data, err := json.Marshal(svc.Status)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
