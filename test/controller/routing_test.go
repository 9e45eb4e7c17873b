package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

func deployment() client.Object { return &appsv1.Deployment{} }
func service() client.Object    { return &corev1.Service{} }
func route() client.Object      { return &gatewayv1.HTTPRoute{} }
func poolV1() client.Object     { return &gieapiv1.InferencePool{} }

const simulator = `
metadata:
  name: sim
spec:
  model:
    name: Qwen/Qwen2.5-0.5B-Instruct
  baseRefs:
  - name: kserve-config-llm-cpu-simulator
  router:
    route: {}
    gateway: {}
    scheduler: {}
`

func TestManagedRouteAndGateway(t *testing.T) {
	e := start(t)
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	e.create(simulator)
	e.waitExists(deployment, "sim-kserve", "sim-kserve-router-scheduler")
	e.waitExists(service, "sim-kserve-workload-svc", "sim-epp-service")
	e.waitExists(route, "sim-kserve-route")
	e.waitExists(poolV1, "sim-inference-pool")
	svc := e.waitReady("sim")
	if want := "http://gw.example.com/" + e.ns + "/sim"; svc.Status.URL != want {
		t.Errorf("url = %q, want %q", svc.Status.URL, want)
	}
	if len(svc.Status.Addresses) != 1 || svc.Status.Addresses[0].Name != "gateway-external" {
		t.Errorf("addresses = %+v, want one gateway-external", svc.Status.Addresses)
	}
	ip := svc.Status.InferencePool
	if ip == nil || ip.Name != "sim-inference-pool" {
		t.Fatalf("status.inferencePool = %+v", ip)
	}
	for _, c := range []string{"MainWorkloadReady", "SchedulerWorkloadReady", "GatewaysReady", "HTTPRoutesReady", "InferencePoolReady", v1alpha2.ConditionPresetsCombined} {
		if got := cond(svc, c); got == nil || got.Status != "True" {
			t.Errorf("condition %s = %+v, want True", c, got)
		}
	}
	for _, c := range []string{"WorkerWorkloadReady", "PrefillWorkloadReady", "PrefillWorkerWorkloadReady"} {
		if got := cond(svc, c); got != nil {
			t.Errorf("condition %s = %+v, want none (no such workload)", c, got)
		}
	}
}
