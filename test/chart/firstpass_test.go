package chart

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestFirstPassUnderChartRBAC installs the chart with MaaS
// (ci/maas-values.yaml: a service published to the premium tier) and runs
// the controller with exactly the chart's RBAC. Its first pass over the
// service writes every child with no error: the RBAC API checks a
// RoleBinding against the rights of the Role it names, so a binding
// written before its Role (the endpoint picker's <name>-epp-rb, the tier's
// <name>-model-user-premium) is refused and the pass fails.
func TestFirstPassUnderChartRBAC(t *testing.T) {
	// A namespace per run: with no garbage collector here, a run's
	// children outlive its service and would hold the next run's names.
	ns := testenv.NewNamespace(t, cp.Client, "odh")
	testenv.EnsureNamespace(t, cp.Client, "kuadrant-system")
	testenv.EnsureNamespace(t, cp.Client, "openshift-ingress") // the MaaS gateway's
	// Tier namespaces are cluster-wide and, with no namespace controller
	// here, stay Terminating after an uninstall: a prefix per run.
	prefix := "fp-" + strings.ToLower(rand.Text()[:6]) + "-tier-"
	uninstallOnFailure(t, ns)
	helm.Must(t, append([]string{"install", "odh-serving", chartDir, "-n", ns, "-f", ciValues(t, chartDir)["maas"],
		"--set", "maas.tierNamespacePrefix=" + prefix}, webhookArgs()...)...)

	ctl := runChartController(t, ns)
	testenv.Eventually(t, "premium-chat's children are written and its status observes its generation", func() error {
		for _, c := range []struct{ kind, name string }{
			{"Role", "premium-chat-epp-role"}, {"RoleBinding", "premium-chat-epp-rb"},
			{"Role", "premium-chat-model-user"}, {"RoleBinding", "premium-chat-model-user-premium"},
		} {
			if _, found := get(t, gvkRole.GroupVersion().WithKind(c.kind), ns, c.name); !found {
				return fmt.Errorf("%s %s does not exist", c.kind, c.name)
			}
		}
		svc := mustExist(t, gvkService, ns, "premium-chat")
		observed, _, _ := unstructured.NestedInt64(svc.Object, "status", "observedGeneration")
		if observed != svc.GetGeneration() {
			return fmt.Errorf("observedGeneration %d, generation %d", observed, svc.GetGeneration())
		}
		return nil
	})
	errs := ctl.errors() // before the stop, which cancels requests in flight
	ctl.stop()
	if len(errs) > 0 {
		t.Errorf("the controller logged %d errors on its first pass under the chart's RBAC:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	helm.Must(t, "uninstall", "odh-serving", "-n", ns)
}

// TestStaticFirstPassUnderChartRBAC installs the chart in static mode
// (ci/static-values.yaml, certificates from cert-manager: Helm and the
// post-renderer make the children) and runs the controller with exactly
// the chart's RBAC. Everything it watches in static mode it may list and
// watch: a watch it may not hold fails its cache's sync ("cannot list
// resource ... at the cluster scope") and logs an error on every retry.
func TestStaticFirstPassUnderChartRBAC(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "odh")
	uninstallOnFailure(t, ns)
	helm.Must(t, append([]string{"install"}, staticInstall(t, ns)...)...)

	ctl := runChartController(t, ns)
	testenv.Eventually(t, "chat's status observes its generation", func() error {
		svc := mustExist(t, gvkService, ns, "chat")
		observed, _, _ := unstructured.NestedInt64(svc.Object, "status", "observedGeneration")
		if observed != svc.GetGeneration() {
			return fmt.Errorf("observedGeneration %d, generation %d", observed, svc.GetGeneration())
		}
		return nil
	})
	errs := ctl.errors()
	ctl.stop()
	if len(errs) > 0 {
		t.Errorf("the controller logged %d errors on its first pass in static mode under the chart's RBAC:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	helm.Must(t, "uninstall", "odh-serving", "-n", ns)
}
