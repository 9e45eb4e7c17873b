package integration

import (
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestIntegrationHelmPostRender runs the real helm CLI with odh-serving as
// its post-renderer in static mode, and applies what comes out to the API
// server as a server-side dry run.
func TestIntegrationHelmPostRender(t *testing.T) {
	helm := testenv.HelmFor(t, "helm", "")
	bin := filepath.Join(t.TempDir(), "odh-serving")
	if err := testenv.BuildCommand(t.Context(), "odh-serving", bin); err != nil {
		t.Fatal(err)
	}
	stdout := helm.Must(t, "template", "demo", "testdata/chart", "--namespace", "helm-demo",
		"--post-renderer", bin,
		"--post-renderer-args", "post-render", "--post-renderer-args", "--mode=static", "--post-renderer-args", "--namespace=helm-demo")
	docs, err := manifest.Split("helm-output", []byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	testenv.EnsureNamespace(t, cp.Client, "helm-demo")
	for _, d := range docs {
		kinds[d.Object.GetKind()]++
		obj := d.Object.DeepCopy()
		if obj.GetNamespace() == "" && obj.GetKind() != "ClusterRoleBinding" {
			obj.SetNamespace("helm-demo") // helm install sets the release namespace
		}
		if err := cp.Client.Patch(t.Context(), obj, client.Apply, client.DryRunAll, client.FieldOwner("odh-serving-test")); err != nil {
			t.Errorf("%s %s rejected: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	for kind, n := range map[string]int{"LLMInferenceService": 1, "LLMInferenceServiceConfig": 1, "Deployment": 2, "InferencePool": 2, "HTTPRoute": 1} {
		if kinds[kind] != n {
			t.Errorf("%d %s in the output, want %d (all kinds: %v)", kinds[kind], kind, n, kinds)
		}
	}
	if !strings.Contains(stdout, "- publishers/helm-demo/models/demo-model") {
		t.Error("the simulator preset did not give the model its publisher name in the simulator's flags")
	}
}

// TestIntegrationHelmStaticAuthWithoutKuadrant installs the chart with
// `helm install` and odh-serving as its post-renderer in static mode with
// auth on, on an API server without Kuadrant's CRDs: the render writes
// each route with the AuthPolicy that covers it (the service's own), so
// the release brings an AuthPolicy wherever it brings a route, with or
// without the gateway's, and Helm refuses the whole release, naming the
// kind, before it applies anything: no route is served unchecked.
func TestIntegrationHelmStaticAuthWithoutKuadrant(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "static-auth")
	helm := testenv.HelmFor(t, "helm", testenv.Kubeconfig(t, cp.Config, ns))
	bin := filepath.Join(t.TempDir(), "odh-serving")
	if err := testenv.BuildCommand(t.Context(), "odh-serving", bin); err != nil {
		t.Fatal(err)
	}
	install := func(values ...string) error {
		args := []string{"install", "static-auth", "testdata/chart", "--namespace", ns,
			"--post-renderer", bin, "--post-renderer-args", "post-render", "--post-renderer-args", "--mode=static",
			"--post-renderer-args", "--namespace=" + ns, "--post-renderer-args", "--enable-auth"}
		_, err := helm.Run(t.Context(), append(args, values...)...)
		return err
	}
	if err := install(); err == nil || !strings.Contains(err.Error(), `no matches for kind "AuthPolicy"`) {
		t.Errorf("the route's policy in the release, no gateway policy, no Kuadrant: %v; want Helm's refusal of kind AuthPolicy", err)
	}
	if err := install("--set", "auth=true"); err == nil || !strings.Contains(err.Error(), `no matches for kind "AuthPolicy"`) {
		t.Errorf("the gateway policy in the release, no Kuadrant: %v; want Helm's refusal of kind AuthPolicy", err)
	}
	for _, list := range []client.ObjectList{&gatewayv1.HTTPRouteList{}, &v1alpha2.LLMInferenceServiceList{}, &appsv1.DeploymentList{}} {
		if err := cp.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if n := meta.LenList(list); n != 0 {
			t.Errorf("%d %T in %s after the refused installs, want none", n, list, ns)
		}
	}
}
