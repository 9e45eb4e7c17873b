package controllertest

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/internal/controller"
)

// oldEPPAuth makes the endpoint picker's ClusterRoleBinding as versions
// before the hashed names did: named <namespace>-<name>-epp-auth-rb (a/b-c
// and a-b/c shared it), labelled and annotated as the service's, bound to
// subject, a ServiceAccount of the service's namespace.
func (e *env) oldEPPAuth(svc *v1alpha2.LLMInferenceService, subject string) string {
	e.t.Helper()
	name := svc.Namespace + "-" + svc.Name + "-epp-auth-rb"
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				convention.LabelPartOf: convention.PartOf, convention.LabelName: svc.Name,
				convention.LabelComponent: "llminferenceservice-router-scheduler",
			},
			Annotations: map[string]string{
				controller.AnnotationOwner: svc.Namespace + "/" + svc.Name, controller.AnnotationOwnerUID: string(svc.UID),
			},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: subject, Namespace: svc.Namespace}},
	}
	e.must(e.c.Create(context.Background(), crb))
	return name
}

// TestOldClusterBindingNamesGoOnUpgrade: the controller removes the
// ClusterRoleBindings an earlier version made under the old names. A
// service that renders gets its binding under the new name and loses the
// old one with the rest of the prune; a service this version refuses to
// render loses its old binding too, though nothing else of it is touched:
// here one whose old binding made the namespace's default ServiceAccount
// an auth delegator (its endpoint picker's template named it, which this
// version refuses).
func TestOldClusterBindingNamesGoOnUpgrade(t *testing.T) {
	e := newEnv(t)
	e.gateway(e.sys, "kserve-ingress-gateway", "gw.example.com")
	sim := e.create(simulator)
	refused := e.create(`
metadata:
  name: refused
spec:
  model:
    uri: hf://org/model
    lora:
      adapters:
      - {name: sql, uri: "oci://quay.io/team/sql-lora:1"}
  baseRefs:
  - name: kserve-config-llm-cpu-simulator
  router:
` + managedRouter)
	// As the earlier version left them, before the upgrade.
	oldSim := e.oldEPPAuth(sim, "sim-epp-sa")
	oldRefused := e.oldEPPAuth(refused, "default")

	e.run()
	e.waitExists(clusterBinding, e.eppAuth("sim"))
	e.waitGone(clusterBinding, oldSim)
	e.waitCondition("refused", v1alpha2.ConditionReady, metav1.ConditionFalse, controller.ReasonCombineBaseError)
	e.waitGone(clusterBinding, oldRefused)
	if e.exists(clusterBinding(), e.eppAuth("refused")) {
		t.Errorf("the refused service got a new ClusterRoleBinding")
	}
}
