package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// hangLimit is how long a deletion may take before it counts as hung.
const hangLimit = 30 * time.Second

// TestUninstallPath follows the README's Uninstall section on the API
// server with the real helm: both charts installed, the controller running
// with the chart's args and RBAC, services made by the release and by a
// user. Then:
//
//  1. helm uninstall odh-serving, the controller stops: the release's own
//     service goes within 30 s;
//  2. the user deletes a service and its namespace (the namespace
//     controller's steps, which envtest does not run): nothing waits for
//     the gone controller, so both go within 30 s; reading and deleting go
//     through v1alpha2, the preferred version, so the conversion webhook
//     (gone with the controller chart on a real cluster) is not needed;
//  3. odh-serving uninstall removes what only the controller removes: the
//     finalizer of a service an earlier version finalized, and the
//     ClusterRoleBindings of the gone services;
//  4. a reinstall works, and in the normal order (services deleted while
//     the controller runs) a service, its bindings and its namespace go
//     within 30 s.
func TestUninstallPath(t *testing.T) {
	// A namespace per run: with no garbage collector here, a run's
	// children outlive its services and would hold the next run's names.
	ns := testenv.NewNamespace(t, cp.Client, "odh")
	install := append([]string{"install", "odh-serving", chartDir, "-n", ns,
		"--set-json", `services={"chat":{"spec":` + simulatorSpec + `}}`}, webhookArgs()...)
	uninstallOnFailure(t, ns)
	helm.Must(t, install...)
	ctl := runChartController(t, ns)
	apps := testenv.NewNamespace(t, cp.Client, "apps")
	createService(t, apps, "with-picker", simulatorSpec)
	createService(t, apps, "plain", `{"model": {"uri": "hf://Qwen/Qwen3-0.6B"}, "baseRefs": [{"name": "kserve-config-llm-cpu-simulator"}]}`)
	bindings := map[string]string{"chat": eppAuth(t, ns, "chat"), "with-picker": eppAuth(t, apps, "with-picker")}
	testenv.Eventually(t, "the controller makes the services' children", func() error {
		for _, name := range bindings {
			if _, found := get(t, gvkCRB, "", name); !found {
				return fmt.Errorf("ClusterRoleBinding %s does not exist", name)
			}
		}
		for _, d := range []struct{ ns, name string }{{ns, "chat-kserve"}, {apps, "with-picker-kserve"}, {apps, "plain-kserve"}} {
			if _, found := get(t, gvkDeployment, d.ns, d.name); !found {
				return fmt.Errorf("Deployment %s/%s does not exist", d.ns, d.name)
			}
		}
		return nil
	})
	for _, s := range []struct{ ns, name string }{{ns, "chat"}, {apps, "with-picker"}, {apps, "plain"}} {
		if f := mustExist(t, gvkService, s.ns, s.name).GetFinalizers(); len(f) > 0 {
			t.Errorf("service %s/%s carries finalizers %v: its deletion would wait for the controller", s.ns, s.name, f)
		}
	}

	// 1. helm uninstall deletes the controller's Deployment, its RBAC and the
	// release's service together; the controller's pod stops.
	helm.Must(t, "uninstall", "odh-serving", "-n", ns)
	ctl.stop()
	waitGone(t, gvkService, ns, "chat")

	// 2. The user deletes a service, then its namespace.
	assertPreferredVersion(t, "serving.kserve.io", "v1alpha2")
	svc := &unstructured.Unstructured{}
	svc.SetGroupVersionKind(gvkService)
	svc.SetNamespace(apps)
	svc.SetName("with-picker")
	if err := cp.Client.Delete(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gvkService, apps, "with-picker")
	// A service an earlier version finalized: only odh-serving uninstall
	// lets it go.
	createService(t, apps, "finalized", simulatorSpec, "serving.kserve.io/llmisvc-finalizer")
	out := runUninstall(t)
	if want := "LLMInferenceService " + apps + "/finalized: removed finalizer serving.kserve.io/llmisvc-finalizer"; !strings.Contains(out, want) {
		t.Errorf("odh-serving uninstall printed\n%s\nwant a line %q", out, want)
	}
	for svcName, crb := range bindings {
		if want := "ClusterRoleBinding " + crb + ": deleted"; !strings.Contains(out, want) {
			t.Errorf("odh-serving uninstall printed\n%s\nwant a line %q (service %s is gone)", out, want, svcName)
		}
		mustNotExist(t, gvkCRB, "", crb)
	}
	deleteNamespace(t, apps)

	// 4. Reinstall; the normal order.
	helm.Must(t, install...)
	runChartController(t, ns)
	apps2 := testenv.NewNamespace(t, cp.Client, "apps")
	createService(t, apps2, "again", simulatorSpec)
	crb := eppAuth(t, apps2, "again")
	testenv.Eventually(t, "the reinstalled controller makes the service's children", func() error {
		if _, found := get(t, gvkCRB, "", crb); !found {
			return fmt.Errorf("ClusterRoleBinding %s does not exist", crb)
		}
		if _, found := get(t, gvkCRB, "", bindings["chat"]); !found {
			return fmt.Errorf("ClusterRoleBinding %s of the release's service does not exist", bindings["chat"])
		}
		return nil
	})
	svc.SetNamespace(apps2)
	svc.SetName("again")
	if err := cp.Client.Delete(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gvkService, apps2, "again")
	waitGone(t, gvkCRB, "", crb)
	deleteNamespace(t, apps2)
	svc.SetNamespace(ns)
	svc.SetName("chat")
	if err := cp.Client.Delete(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gvkService, ns, "chat")
	waitGone(t, gvkCRB, "", bindings["chat"])
	helm.Must(t, "uninstall", "odh-serving", "-n", ns)
}

// simulatorSpec is a CPU-simulator service with a managed route, gateway
// and scheduler (whose endpoint picker has a ClusterRoleBinding).
const simulatorSpec = `{"model": {"uri": "hf://Qwen/Qwen3-0.6B", "name": "qwen3"}, "baseRefs": [{"name": "kserve-config-llm-cpu-simulator"}],` +
	` "router": {"route": {}, "gateway": {}, "scheduler": {}}}`

// createService writes an LLMInferenceService as a user would.
func createService(t *testing.T, namespace, name, spec string, finalizers ...string) {
	t.Helper()
	var s map[string]any
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatal(err)
	}
	svc := &unstructured.Unstructured{Object: map[string]any{"spec": s}}
	svc.SetGroupVersionKind(gvkService)
	svc.SetNamespace(namespace)
	svc.SetName(name)
	svc.SetFinalizers(finalizers)
	if err := cp.Client.Create(t.Context(), svc); err != nil {
		t.Fatalf("create service %s/%s: %v", namespace, name, err)
	}
}

// waitGone waits up to hangLimit for an object to be deleted.
func waitGone(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	testenv.Within(t, hangLimit, fmt.Sprintf("%s %s/%s is deleted", gvk.Kind, namespace, name), func() error {
		obj, found := get(t, gvk, namespace, name)
		if found {
			return fmt.Errorf("still there, finalizers %v", obj.GetFinalizers())
		}
		return nil
	})
}

// runUninstall runs odh-serving uninstall as the cluster's administrator
// and returns what it printed.
func runUninstall(t *testing.T) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, "uninstall", "--kubeconfig", testenv.Kubeconfig(t, cp.Config, ""))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("odh-serving uninstall: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// assertPreferredVersion checks the version discovery prefers for a group:
// kubectl, the namespace controller and the garbage collector read and
// delete through it.
func assertPreferredVersion(t *testing.T, group, version string) {
	t.Helper()
	groups, err := discovery.NewDiscoveryClientForConfigOrDie(cp.Config).ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == group {
			if g.PreferredVersion.Version != version {
				t.Errorf("the preferred version of %s is %s, want %s", group, g.PreferredVersion.Version, version)
			}
			return
		}
	}
	t.Errorf("group %s is not served", group)
}

// deleteNamespace deletes a namespace the way kube-controller-manager's
// namespace controller does, which envtest does not run: it deletes the
// namespace, then every object in it through each namespaced resource's
// preferred version, waits until no object is left and finalizes the
// namespace. Objects still there after hangLimit (held by a finalizer)
// fail the test, naming them.
func deleteNamespace(t *testing.T, name string) {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := cp.Client.Delete(ctx, ns); err != nil {
		t.Fatalf("delete namespace %s: %v", name, err)
	}
	lists, err := discovery.NewDiscoveryClientForConfigOrDie(cp.Config).ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	var resources []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "deletecollection") {
				resources = append(resources, gv.WithResource(r.Name))
			}
		}
	}
	for _, r := range resources {
		err := dyn.Resource(r).Namespace(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			t.Errorf("delete the %s in namespace %s: %v", r, name, err)
		}
	}
	testenv.Within(t, hangLimit, "namespace "+name+" is empty", func() error {
		var left []string
		for _, r := range resources {
			l, err := dyn.Resource(r).Namespace(name).List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("list %s: %w", r, err)
			}
			for _, o := range l.Items {
				left = append(left, fmt.Sprintf("%s %s (finalizers %v)", r.Resource, o.GetName(), o.GetFinalizers()))
			}
		}
		if len(left) > 0 {
			return errors.New(strings.Join(left, ", ") + " left")
		}
		return nil
	})
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = nil
	if _, err := cs.CoreV1().Namespaces().Finalize(context.WithoutCancel(ctx), ns, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("finalize namespace %s: %v", name, err)
	}
	waitGone(t, gvkNamespace, "", name)
}

// eppAuth is the name of the endpoint picker's ClusterRoleBinding of the
// service namespace/name.
func eppAuth(t *testing.T, namespace, name string) string {
	t.Helper()
	names, err := build.ClusterNames(namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	return names[0]
}
