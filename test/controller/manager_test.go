package controllertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/internal/controller"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

func get(url string) (int, string, error) {
	resp, err := http.Get(url) //nolint:gosec // a local test URL
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestManagerEndpoints runs the controller as the chart does (leader
// election, the CRD lifecycle at start, metrics and probes) and reads its
// endpoints.
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
			code, body, err := get("http://" + probes + path)
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("%d %s", code, body)
			}
			return err
		})
	}
	code, body, err := get("http://" + metrics + "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
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
