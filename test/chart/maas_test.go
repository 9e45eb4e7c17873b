package chart

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/apiserver"
	"github.com/opendatahub-io/odh-serving/internal/cli"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var (
	gvkNamespace  = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	gvkConfigMap  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	gvkSvc        = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	gvkAPIService = schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}
	gvkRole       = rbacv1.SchemeGroupVersion.WithKind("Role")
	gvkCRB        = rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding")
	gvkRB         = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
)

// access is one question to the API server's authorizer.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	if a.name != "" {
		r += " " + a.name
	}
	return a.verb + " " + r + " " + where
}

// allowed asks whether the ServiceAccount namespace/name may do a.
func allowed(t *testing.T, namespace, name string, a access) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
		},
	}}
	if err := cp.Client.Create(t.Context(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// containerArgs are the args of a Deployment's first container.
func containerArgs(t *testing.T, namespace, name string) []string {
	t.Helper()
	d := mustExist(t, gvkDeployment, namespace, name)
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatalf("Deployment %s/%s has no container", namespace, name)
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

func tierFlags(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "--tier-") {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// TestInstallMaaS installs the packaged chart with ci/maas-values.yaml:
// the tier ConfigMap and namespaces, the MaaS API server with its Service,
// APIService and rights, and the controller with --maas and the same tier
// flags. The API server's ServiceAccount may mint tokens in a tier
// namespace and nothing of the kind elsewhere: no namespaces, no secrets,
// no ServiceAccounts outside the tiers. The gateway's policy engine may
// review tiers; the controller may create a published service's
// model-user Role and bind it.
func TestInstallMaaS(t *testing.T) {
	const ns = "odh-maas"
	testenv.EnsureNamespace(t, cp.Client, ns)
	testenv.EnsureNamespace(t, cp.Client, "kuadrant-system")
	testenv.EnsureNamespace(t, cp.Client, "openshift-ingress") // the MaaS gateway's
	// Tier namespaces are cluster-wide and, with no namespace controller
	// here, stay Terminating after an uninstall: a prefix per run.
	prefix := "maas-" + strings.ToLower(rand.Text()[:6]) + "-tier-"
	install := append([]string{"odh-serving", chartArchive, "-n", ns, "-f", ciValues(t, chartDir)["maas"],
		"--set", "maas.tierNamespacePrefix=" + prefix}, webhookArgs()...)
	uninstallOnFailure(t, ns)
	helm.Must(t, append([]string{"install"}, install...)...)

	cm := mustExist(t, gvkConfigMap, ns, tier.ConfigMapName)
	data, _, _ := unstructured.NestedString(cm.Object, "data", tier.ConfigMapKey)
	tiers, err := tier.Parse(data, prefix)
	if err != nil {
		t.Fatalf("the chart's tier ConfigMap: %v", err)
	}
	if got := tiers.Names(); !slices.Equal(got, []string{"free", "premium", "enterprise"}) {
		t.Errorf("tiers %v", got)
	}
	for _, name := range tiers.Names() {
		mustExist(t, gvkNamespace, "", tiers.Namespace(name))
		mustExist(t, gvkRole, tiers.Namespace(name), "odh-serving-api-server")
	}
	apiArgs := containerArgs(t, ns, "odh-serving-api-server")
	if len(apiArgs) == 0 || apiArgs[0] != "api-server" {
		t.Errorf("the API server's args %v, want api-server first", apiArgs)
	}
	ctrlArgs := containerArgs(t, ns, "odh-serving-controller")
	if !slices.Contains(ctrlArgs, "--maas") {
		t.Errorf("the controller's args %v lack --maas", ctrlArgs)
	}
	want := []string{"--tier-config-name=" + tier.ConfigMapName, "--tier-config-namespace=" + ns, "--tier-namespace-prefix=" + prefix}
	for who, args := range map[string][]string{"controller": ctrlArgs, "API server": apiArgs} {
		if got := tierFlags(args); !slices.Equal(got, want) {
			t.Errorf("the %s's tier flags %v, want %v", who, got, want)
		}
	}
	mustExist(t, gvkSvc, ns, "odh-serving-api-server")
	apiService := mustExist(t, gvkAPIService, "", "v1alpha1.modelserving.opendatahub.io")
	if svc, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "name"); svc != "odh-serving-api-server" {
		t.Errorf("APIService service %q", svc)
	}
	mustExist(t, gvkCRB, "", "odh-serving-api-server-auth-delegator")
	mustExist(t, gvkRB, "kube-system", "odh-serving-api-server-auth-reader")

	premium := tiers.Namespace("premium")
	for _, tc := range []struct {
		a    access
		want bool
	}{
		{access{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: premium, name: "alice-1a2b3c4d"}, true},
		{access{verb: "create", resource: "serviceaccounts", namespace: premium}, true},
		{access{verb: "delete", resource: "serviceaccounts", namespace: premium, name: "alice-1a2b3c4d"}, true},
		{access{verb: "list", group: "serving.kserve.io", resource: "llminferenceservices"}, true},
		{access{verb: "watch", resource: "configmaps", namespace: ns, name: tier.ConfigMapName}, true},
		{access{verb: "get", resource: "configmaps", namespace: "kube-system", name: "extension-apiserver-authentication"}, true},
		{access{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"}, true},
		{access{verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews"}, true},
		// Upstream's faults: namespaces, secrets, ServiceAccounts anywhere.
		{access{verb: "create", resource: "namespaces"}, false},
		{access{verb: "get", resource: "secrets"}, false},
		{access{verb: "list", resource: "secrets"}, false},
		{access{verb: "list", resource: "secrets", namespace: premium}, false},
		{access{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: ns, name: "odh-serving-controller"}, false},
		{access{verb: "create", resource: "serviceaccounts", namespace: "default"}, false},
		{access{verb: "list", resource: "serviceaccounts", namespace: premium}, false},
		{access{verb: "get", resource: "configmaps", namespace: ns, name: "other"}, false},
		{access{verb: "update", group: "serving.kserve.io", resource: "llminferenceservices", namespace: ns, name: "premium-chat"}, false},
	} {
		if got := allowed(t, ns, "odh-serving-api-server", tc.a); got != tc.want {
			t.Errorf("the API server may %s: %v, want %v", tc.a, got, tc.want)
		}
	}
	tierReview := access{verb: "create", group: "modelserving.opendatahub.io", resource: "tierreviews"}
	if !allowed(t, "kuadrant-system", "authorino-authorino", tierReview) {
		t.Error("the gateway's policy engine may not create tierreviews")
	}
	if allowed(t, ns, "default", tierReview) {
		t.Error("any ServiceAccount may create tierreviews")
	}
	// Any authenticated caller may ask for its models and tokens.
	for _, a := range []access{
		{verb: "list", group: "modelserving.opendatahub.io", resource: "models"},
		{verb: "create", group: "modelserving.opendatahub.io", resource: "tokenrequests"},
		{verb: "create", group: "modelserving.opendatahub.io", resource: "tokenrevocations"},
	} {
		if !allowed(t, "default", "someone", a) {
			t.Errorf("an authenticated caller may not %s", a)
		}
	}

	// The controller writes a published service's access as it would.
	c := controllerClient(t, ns)
	for _, obj := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "premium-chat-model-user"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"serving.kserve.io"}, Resources: []string{"llminferenceservices"}, ResourceNames: []string{"premium-chat"}, Verbs: []string{"post"},
		}}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "premium-chat-model-user-premium"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "premium-chat-model-user"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: tiers.ServiceAccountGroup("premium")}},
		},
	} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Errorf("the controller may not create %T %s: %v", obj, obj.GetName(), err)
			continue
		}
		t.Cleanup(func() { _ = cp.Client.Delete(context.Background(), obj) })
	}

	// Self-signed mode: the controller injects its CA into the APIService.
	apiSvc := &unstructured.Unstructured{}
	apiSvc.SetGroupVersionKind(gvkAPIService)
	apiSvc.SetName("v1alpha1.modelserving.opendatahub.io")
	caPatch := `{"spec": {"caBundle": "` + webhookCA + `"}}`
	if err := c.Patch(t.Context(), apiSvc, client.RawPatch(types.MergePatchType, []byte(caPatch)), client.DryRunAll); err != nil {
		t.Errorf("the controller may not inject the CA into the APIService: %v", err)
	}

	helm.Must(t, "uninstall", "odh-serving", "-n", ns)
	mustNotExist(t, gvkAPIService, "", "v1alpha1.modelserving.opendatahub.io")
	mustNotExist(t, gvkCRB, "", "odh-serving-api-server-auth-delegator")
}

// TestAPIServerFlags parses the API server Deployment's args, as the
// chart renders them in each cert mode, with odh-serving api-server's own
// flags: every flag exists and every value is valid.
func TestAPIServerFlags(t *testing.T) {
	for _, mode := range []string{"self-signed", "cert-manager", "service-ca"} {
		t.Run(mode, func(t *testing.T) {
			_, objs := render(t, templateArgs(chartDir, ciValues(t, chartDir)["maas"], "--set", "certMode="+mode)...)
			deploy := one(t, objs, "Deployment", "odh-serving-api-server")
			containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			if len(args) == 0 || args[0] != "api-server" {
				t.Fatalf("args %v, want api-server first", args)
			}
			o := apiserver.NewOptions()
			fs := pflag.NewFlagSet("api-server", pflag.ContinueOnError)
			cli.AddAPIServerFlags(fs, o)
			if err := fs.Parse(args[1:]); err != nil {
				t.Fatalf("args %v: %v", args, err)
			}
			if err := o.Validate(); err != nil {
				t.Errorf("args %v: %v", args, err)
			}
			if o.Tiers.ConfigMapNamespace != "opendatahub" || o.SecureServing.ServerCert.CertKey.CertFile == "" {
				t.Errorf("args %v: tier ConfigMap namespace %q, certificate %q", args, o.Tiers.ConfigMapNamespace, o.SecureServing.ServerCert.CertKey.CertFile)
			}
		})
	}
}
