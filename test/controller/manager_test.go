package controllertest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestManagerEndpoints runs the controller as the chart does (leader
// election, the CRD lifecycle at start, metrics and probes) and reads its
// endpoints. /metrics is HTTPS and answers only a bearer token the API
// server authenticates and authorizes for get on /metrics: a scrape with
// no token is refused with 401, one by a ServiceAccount without that right
// with 403; the metrics reader gets the metrics.
func TestManagerEndpoints(t *testing.T) {
	metrics, probes := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	e := startWithGateway(t, func(o *controller.Options) {
		o.MetricsBindAddress, o.HealthProbeBindAddress = metrics, probes
		o.LeaderElect, o.ManageCRDs = true, true
	})
	e.create(simulator)
	e.waitReady("sim")
	e.waitCondition("sim", "InferencePoolMigrated", metav1.ConditionTrue, "")
	for _, path := range []string{"/healthz", "/readyz"} {
		testenv.Eventually(t, path+" answers 200", func() error {
			code, body, err := get("http://"+probes+path, "")
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("%d %s", code, body)
			}
			return err
		})
	}
	// The metrics server makes its self-signed certificate before it
	// listens, which takes a while on a busy host: the probes may answer
	// before it does.
	testenv.Eventually(t, "/metrics accepts connections", func() error {
		_, _, err := get("https://"+metrics+"/metrics", "")
		return err
	})
	reader, stranger := e.metricsReader("reader", true), e.metricsReader("stranger", false)
	for _, c := range []struct {
		who, token string
		want       int
	}{{"no token", "", http.StatusUnauthorized}, {"a ServiceAccount not allowed /metrics", stranger, http.StatusForbidden}} {
		if code, body, err := get("https://"+metrics+"/metrics", c.token); err != nil || code != c.want {
			t.Errorf("/metrics with %s: %d %v, want %d (%.200s)", c.who, code, err, c.want, body)
		}
	}
	code, body, err := get("https://"+metrics+"/metrics", reader)
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics as the metrics reader: %d %v", code, err)
	}
	for _, want := range []string{
		`controller_runtime_reconcile_total{controller="llminferenceservice",result="success"}`,
		`odh_serving_services{phase="v1"}`,
		`odh_serving_migrations_total{to="v1"}`,
		`odh_serving_crd_applies_total{crd="inferencepools.inference.networking.k8s.io",result=`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	lease := &coordinationv1.Lease{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: e.sys, Name: controller.LeaderElectionID}, lease); err != nil {
		t.Errorf("leader election Lease: %v", err)
	}
}

// metricsReader makes the ServiceAccount name in the test namespace and
// returns a token of it; allowed binds it to a ClusterRole that grants get
// on /metrics, as the chart's odh-serving-metrics-reader does.
func (e *env) metricsReader(name string, allowed bool) string {
	e.t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	e.must(e.c.Create(ctx, sa))
	if allowed {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: name}},
		}
		for _, o := range []client.Object{role, binding} {
			e.must(e.c.Create(ctx, o))
			e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), o) })
		}
	}
	req := &authenticationv1.TokenRequest{}
	e.must(e.c.SubResource("token").Create(ctx, sa, req))
	return req.Status.Token
}

// get reads url, with token as the bearer token when set. The controller's
// /metrics certificate is self-signed: this checks who may read, not the
// certificate.
func get(url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestStartStallsOnACRDRead starts the controller against an API server
// that answers everything but the read of one optional CRD, which it holds
// until the request is cancelled, and then cancels the start (a SIGTERM):
// Run returns with an error naming that CRD.
func TestStartStallsOnACRDRead(t *testing.T) {
	const crd = "inferencepools.inference.networking.k8s.io"
	e := newEnv(t)
	stalled := make(chan struct{}, 1)
	cfg := e.rec.Config(cp.Config)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/customresourcedefinitions/"+crd) {
				return next.RoundTrip(req)
			}
			select {
			case stalled <- struct{}{}:
			default:
			}
			<-req.Context().Done()
			return nil, req.Context().Err()
		})
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- controller.Run(ctx, cfg, e.opts) }()
	select {
	case <-stalled:
	case err := <-done:
		t.Fatalf("Run returned before reading CustomResourceDefinition %s: %v", crd, err)
	}
	cancel()
	select {
	case err := <-done:
		want := "get CustomResourceDefinition " + crd
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v; want an error naming %q, from the cancel", err, want)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of its context's end")
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
