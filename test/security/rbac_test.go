package security

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// forbiddenVerbs let a subject grant or assume rights it does not hold.
var forbiddenVerbs = []string{"escalate", "bind", "impersonate"}

// clusterScopedGrants are the cluster-scoped resources (group/resource) the
// chart's ClusterRole may grant, and why no namespaced right would do.
var clusterScopedGrants = map[string]string{
	"apiextensions.k8s.io/customresourcedefinitions": "the controller applies the GIE CRDs (--manage-crds) and watches which CRDs are " +
		"established to start the matching controllers; update and patch are limited by resourceNames to our and GIE's CRDs",
	"admissionregistration.k8s.io/validatingwebhookconfigurations": "the controller injects its CA into odh-serving-validation " +
		"(update and patch limited by resourceNames); webhook configurations are cluster-scoped",
	"admissionregistration.k8s.io/mutatingwebhookconfigurations": "static mode, self-signed: the controller injects its CA into " +
		"odh-serving-replicas (get, update and patch limited by resourceNames); webhook configurations are cluster-scoped",
	"rbac.authorization.k8s.io/clusterrolebindings": "each service's endpoint picker is bound to system:auth-delegator so it can " +
		"check the callers of its metrics endpoint; TokenReview and SubjectAccessReview are cluster-scoped, so only a " +
		"ClusterRoleBinding can grant them",
	"authentication.k8s.io/tokenreviews": "the controller's /metrics is HTTPS and authenticates each caller's bearer token " +
		"with a TokenReview (controller-runtime's filters.WithAuthenticationAndAuthorization; TestManagerEndpoints); and the " +
		"controller must hold the rights of system:auth-delegator to bind endpoint pickers to it without the bind verb",
	"authorization.k8s.io/subjectaccessreviews": "as tokenreviews: a SubjectAccessReview authorizes each /metrics caller " +
		"for get on the non-resource URL /metrics, and the controller holds what it binds",
	"gateway.networking.k8s.io/gatewayclasses": "which implementation runs a route's gateway decides what tells it to " +
		"originate TLS (DestinationRules for Istio's, BackendTLSPolicies for Envoy Gateway's and kgateway's); " +
		"GatewayClasses are cluster-scoped; read-only",
	"apiregistration.k8s.io/apiservices": "maas.enabled with self-signed certificates: the controller injects its CA " +
		"into the APIService v1alpha1.modelserving.opendatahub.io (limited by resourceNames); APIServices are cluster-scoped",
	"modelserving.opendatahub.io/tierreviews": "maas.enabled: the gateway's policy engine asks which tier a caller has; " +
		"a review, like TokenReview, belongs to no namespace",
	"modelserving.opendatahub.io/tokenrequests": "maas.enabled: users mint their MaaS token; the request names no " +
		"namespace (the tier decides where the ServiceAccount lives)",
	"modelserving.opendatahub.io/tokenrevocations": "maas.enabled: users revoke their MaaS tokens, as tokenrequests",
}

// aggregatedScopes are the resources of odh-serving api-server
// (internal/apiserver), which this control plane does not serve: whether
// each is namespaced, as its storage declares.
var aggregatedScopes = map[string]bool{
	"modelserving.opendatahub.io/models":           true,
	"modelserving.opendatahub.io/tierreviews":      false,
	"modelserving.opendatahub.io/tokenrequests":    false,
	"modelserving.opendatahub.io/tokenrevocations": false,
}

// namespacedInClusterRole are namespaced resources the ClusterRole may keep
// even when the controller watches only some namespaces.
var namespacedInClusterRole = map[string]string{
	"gateway.networking.k8s.io/gateways": "a service's gateway.refs may name a Gateway in any namespace; read-only",
}

// allNamespaces is why a ClusterRole may grant namespaced resources when
// watchNamespaces is empty.
const allNamespaces = "watchNamespaces is empty: the controller reconciles services in every namespace"

// boundClusterRoles are the ClusterRoles a service's children may bind
// cluster-wide, and why.
var boundClusterRoles = map[string]string{
	"system:auth-delegator": "the endpoint picker checks who calls its metrics endpoint with TokenReview and " +
		"SubjectAccessReview, which are cluster-scoped",
	"kserve-metrics-reader-cluster-role": "the service's metrics reader, whose token its ServiceMonitor sends, may get " +
		"the endpoint picker's /metrics, a non-resource URL that only a ClusterRoleBinding can grant",
}

// knownNamespaced are resources of APIs the control plane does not serve.
var knownNamespaced = []string{
	"llm-d.ai/inferenceobjectives", "llm-d.ai/inferencemodelrewrites",
	"keda.sh/scaledobjects", "kuadrant.io/authpolicies",
}

// TestRBACChildren checks the RBAC the engine renders for every golden
// input: no wildcards, no escalate, bind or impersonate, cluster-wide
// bindings only to the ClusterRoles in boundClusterRoles, and every
// ServiceAccount a binding names one the same render makes (a template
// never picks whom the controller binds).
func TestRBACChildren(t *testing.T) {
	roles, bindings := 0, 0
	for _, r := range renderGolden(t) {
		made := map[string]bool{}
		for _, o := range r.objs {
			if o.GetKind() == "ServiceAccount" {
				made[o.GetNamespace()+"/"+o.GetName()] = true
			}
		}
		checkSubjects := func(kind, name string, subjects []rbacv1.Subject) {
			for _, s := range subjects {
				if s.Kind == rbacv1.ServiceAccountKind && !made[s.Namespace+"/"+s.Name] {
					t.Errorf("%s: %s %s binds ServiceAccount %s/%s, which the render does not make", r.source, kind, name, s.Namespace, s.Name)
				}
			}
		}
		for _, o := range r.objs {
			switch o.GetKind() {
			case "Role":
				roles++
				checkRules(t, r.source, o)
			case "ClusterRole":
				t.Errorf("%s: ClusterRole %s: a service's children must not define cluster-wide rights", r.source, o.GetName())
			case "ClusterRoleBinding":
				bindings++
				var b rbacv1.ClusterRoleBinding
				fromUnstructured(t, o, &b)
				if _, ok := boundClusterRoles[b.RoleRef.Name]; !ok || b.RoleRef.Kind != "ClusterRole" {
					t.Errorf("%s: ClusterRoleBinding %s binds %s %s, which is not in the allow-list", r.source, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
				}
				for _, s := range b.Subjects {
					if s.Kind != rbacv1.ServiceAccountKind || s.Namespace == "" {
						t.Errorf("%s: ClusterRoleBinding %s binds %s %s; only the service's own service accounts", r.source, b.Name, s.Kind, s.Name)
					}
				}
				checkSubjects("ClusterRoleBinding", b.Name, b.Subjects)
			case "RoleBinding":
				var b rbacv1.RoleBinding
				fromUnstructured(t, o, &b)
				if b.RoleRef.Kind != "Role" {
					t.Errorf("%s: RoleBinding %s refers to %s %s; children bind their own Roles", r.source, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
				}
				checkSubjects("RoleBinding", b.Name, b.Subjects)
			}
		}
	}
	if roles == 0 || bindings == 0 {
		t.Fatalf("found %d Roles and %d ClusterRoleBindings; the golden inputs should render both", roles, bindings)
	}
}

// TestRBACChart renders charts/odh-serving with each of its ci values files
// and with watchNamespaces set, and checks its RBAC: no wildcards, no
// escalate, bind or impersonate; every verb on every resource of every
// Role and ClusterRole is allowed by an entry of chartRules, which says why
// and to which names it is limited; a ClusterRole bound cluster-wide
// grants cluster-scoped resources only from clusterScopedGrants, and
// namespaced ones only while every namespace is watched.
func TestRBACChart(t *testing.T) {
	helm := testenv.HelmFor(t, "helm", "")
	values := golden.Glob(t, "../../charts/odh-serving/ci/*-values.yaml")
	type render struct {
		name          string
		args          []string
		allNamespaces bool
	}
	var renders []render
	for _, v := range values {
		renders = append(renders, render{name: filepath.Base(v), args: []string{"-f", v}, allNamespaces: true})
	}
	renders = append(renders, render{name: "watchNamespaces", args: []string{"--set", "watchNamespaces={team-a,team-b}"}},
		render{name: "static mode, self-signed", args: []string{"--set", "controller.staticMode=true"}, allNamespaces: true})
	t.Logf("namespaced rights in the ClusterRole are allowed while %s", allNamespaces)
	// The scopes of Istio's and the Prometheus Operator's kinds come from
	// their CRDs.
	testenv.InstallCRDs(t, cp.Client, controlplane.PlatformCRDs...)
	mapper := cp.Client.RESTMapper()
	used := map[string]bool{}
	usedRules := map[int]bool{}
	for _, r := range renders {
		t.Run(r.name, func(t *testing.T) {
			args := append([]string{"template", "odh-serving", "../../charts/odh-serving", "--namespace", "opendatahub"}, r.args...)
			out := helm.Must(t, args...)
			docs, err := manifest.Split(r.name, []byte(out))
			if err != nil {
				t.Fatal(err)
			}
			clusterRoles := map[string]*unstructured.Unstructured{}
			for _, d := range docs {
				switch d.Object.GetKind() {
				case "Role", "ClusterRole":
					checkRules(t, r.name, d.Object)
					var role rbacv1.ClusterRole // Role and ClusterRole share the rules' shape
					fromUnstructured(t, d.Object, &role)
					for _, p := range checkChartRules(role.Name, role.Rules, usedRules) {
						t.Errorf("%s %s: %s", d.Object.GetKind(), client.ObjectKeyFromObject(d.Object), p)
					}
					if d.Object.GetKind() == "ClusterRole" {
						clusterRoles[d.Object.GetName()] = d.Object
					}
				}
			}
			for _, d := range docs {
				if d.Object.GetKind() != "ClusterRoleBinding" {
					continue
				}
				var b rbacv1.ClusterRoleBinding
				fromUnstructured(t, d.Object, &b)
				role, ok := clusterRoles[b.RoleRef.Name]
				if !ok {
					role = builtinClusterRole(t, b.RoleRef.Name)
				}
				if role == nil {
					t.Errorf("ClusterRoleBinding %s binds %s, which neither the chart nor Kubernetes defines", b.Name, b.RoleRef.Name)
					continue
				}
				var cr rbacv1.ClusterRole
				fromUnstructured(t, role, &cr)
				for _, rule := range cr.Rules {
					for _, gr := range groupResources(rule) {
						namespaced := isNamespaced(t, mapper, gr)
						switch {
						case !namespaced:
							if _, ok := clusterScopedGrants[gr]; !ok {
								t.Errorf("ClusterRole %s grants %v on the cluster-scoped %s, which is not in the allow-list", cr.Name, rule.Verbs, gr)
							}
							used[gr] = true
						case r.allNamespaces:
							// Namespaced rights in the ClusterRole while every
							// namespace is watched: each rule is allowed, with its
							// reason and names, by chartRules (checked above).
						default:
							if _, ok := namespacedInClusterRole[gr]; !ok {
								t.Errorf("with watchNamespaces set, ClusterRole %s still grants %v on %s in every namespace", cr.Name, rule.Verbs, gr)
							}
							used[gr] = true
						}
					}
				}
			}
		})
	}
	for i, a := range chartRules {
		if !usedRules[i] {
			t.Errorf("chartRules entry for %s %v %v is never needed; remove it", a.role, a.verbs, a.resources)
		}
		if a.why == "" {
			t.Errorf("chartRules entry for %s %v %v says not why", a.role, a.verbs, a.resources)
		}
	}
	for _, allow := range []map[string]string{clusterScopedGrants, namespacedInClusterRole} {
		for gr := range allow {
			if !used[gr] {
				t.Errorf("allow-list entry %s is never needed; remove it", gr)
			}
		}
	}
}

// builtinClusterRole reads a ClusterRole Kubernetes bootstraps, such as
// system:auth-delegator, from the control plane, so that a binding to it is
// checked against the rights it really grants; nil when there is none.
func builtinClusterRole(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	if !strings.HasPrefix(name, "system:") {
		return nil
	}
	role := &unstructured.Unstructured{}
	role.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"))
	if err := cp.Client.Get(t.Context(), client.ObjectKey{Name: name}, role); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatalf("reading ClusterRole %s: %v", name, err)
	}
	return role
}

// checkRules fails on ruleProblems.
func checkRules(t *testing.T, source string, o *unstructured.Unstructured) {
	t.Helper()
	var role rbacv1.ClusterRole // Role and ClusterRole share the rules' shape
	fromUnstructured(t, o, &role)
	for _, p := range ruleProblems(&role) {
		t.Errorf("%s: %s %s: %s", source, o.GetKind(), o.GetName(), p)
	}
}

// ruleProblems lists wildcards, verbs that grant what the subject does not
// hold, and aggregation, whose rights cannot be reviewed here.
func ruleProblems(role *rbacv1.ClusterRole) []string {
	var problems []string
	if role.AggregationRule != nil {
		problems = append(problems, "aggregates other roles")
	}
	for i, r := range role.Rules {
		for _, field := range []struct {
			name   string
			values []string
		}{
			{"apiGroups", r.APIGroups}, {"resources", r.Resources}, {"verbs", r.Verbs},
			{"resourceNames", r.ResourceNames}, {"nonResourceURLs", r.NonResourceURLs},
		} {
			for _, v := range field.values {
				if strings.Contains(v, "*") {
					problems = append(problems, fmt.Sprintf("rule %d: wildcard %q in %s", i, v, field.name))
				}
			}
		}
		for _, v := range r.Verbs {
			if slices.Contains(forbiddenVerbs, v) {
				problems = append(problems, fmt.Sprintf("rule %d grants %q", i, v))
			}
		}
	}
	return problems
}

// TestRuleProblemsCatches feeds ruleProblems the rules it must refuse.
func TestRuleProblemsCatches(t *testing.T) {
	for name, rule := range map[string]rbacv1.PolicyRule{
		"verb wildcard":     {APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"*"}},
		"resource wildcard": {APIGroups: []string{"apps"}, Resources: []string{"*"}, Verbs: []string{"get"}},
		"group wildcard":    {APIGroups: []string{"*"}, Resources: []string{"pods"}, Verbs: []string{"get"}},
		"subresources":      {APIGroups: []string{""}, Resources: []string{"pods/*"}, Verbs: []string{"get"}},
		"escalate":          {APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}, Verbs: []string{"escalate"}},
		"bind":              {APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}},
		"impersonate":       {APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}},
		"non-resource URLs": {NonResourceURLs: []string{"/metrics*"}, Verbs: []string{"get"}},
	} {
		if p := ruleProblems(&rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{rule}}); len(p) != 1 {
			t.Errorf("%s: problems %v, want one", name, p)
		}
	}
	ok := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}
	if p := ruleProblems(&rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{ok}}); len(p) != 0 {
		t.Errorf("a read-only rule: problems %v", p)
	}
}

// groupResources lists a rule's resources as group/resource, subresources
// folded into their resource.
func groupResources(r rbacv1.PolicyRule) []string {
	var out []string
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			base, _, _ := strings.Cut(res, "/")
			out = append(out, g+"/"+base)
		}
	}
	return out
}

// isNamespaced asks the API server whether group/resource is namespaced.
func isNamespaced(t *testing.T, mapper meta.RESTMapper, gr string) bool {
	t.Helper()
	if slices.Contains(knownNamespaced, gr) {
		return true
	}
	if namespaced, ok := aggregatedScopes[gr]; ok {
		return namespaced
	}
	group, resource, _ := strings.Cut(gr, "/")
	gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: group, Resource: resource})
	if err != nil {
		t.Fatalf("the control plane does not serve %s: %v", gr, err)
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatal(err)
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace
}
