package apiserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestDiscovery: the four resources are discoverable with their scope
// and verbs, as `kubectl api-resources` shows them.
func TestDiscovery(t *testing.T) {
	d, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := d.ServerResourcesForGroupVersion(modelv1alpha1.GroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range list.APIResources {
		got[r.Name] = fmt.Sprintf("kind=%s namespaced=%t verbs=%v", r.Kind, r.Namespaced, r.Verbs)
	}
	want := map[string]string{
		"models":           "kind=Model namespaced=true verbs=[get list]",
		"tierreviews":      "kind=TierReview namespaced=false verbs=[create]",
		"tokenrequests":    "kind=TokenRequest namespaced=false verbs=[create]",
		"tokenrevocations": "kind=TokenRevocation namespaced=false verbs=[create]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resources of %s:\n got %v\nwant %v", modelv1alpha1.GroupVersion, got, want)
	}
}

// TestOpenAPI: the aggregated OpenAPI v3 document of the group carries the
// Model schema with its kind and field descriptions, which kubectl explain
// reads.
func TestOpenAPI(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	var raw []byte
	// The kube-apiserver fetches an aggregated server's OpenAPI after the
	// APIService is Available.
	testenv.Eventually(t, "the aggregated OpenAPI v3 of "+modelv1alpha1.GroupVersion.String(), func() (err error) {
		raw, err = kube.RESTClient().Get().AbsPath("/openapi/v3/apis/" + modelv1alpha1.GroupVersion.String()).DoRaw(t.Context())
		return err
	})
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
				GVK []map[string]string `json:"x-kubernetes-group-version-kind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for name, s := range doc.Components.Schemas {
		for _, gvk := range s.GVK {
			if gvk["group"] == modelv1alpha1.GroupName {
				kinds[gvk["kind"]] = true
			}
		}
		if strings.HasSuffix(name, ".ModelSpec") && !strings.Contains(s.Properties["modelName"].Description, "spec.model.name") {
			t.Errorf("%s.modelName has no description: %+v", name, s.Properties)
		}
	}
	for _, k := range []string{"Model", "ModelList", "TierReview", "TokenRequest", "TokenRevocation"} {
		if !kinds[k] {
			t.Errorf("OpenAPI v3 of %s has no schema of kind %s (has %v)", modelv1alpha1.GroupVersion, k, kinds)
		}
	}
}

// TestModelsPerTier: a premium user and a user in no tier group (free
// through system:authenticated) each see exactly their tier's models and
// the [] ones; any other name is NotFound; a user without RBAC gets 403.
func TestModelsPerTier(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "models")
	publish(t, ns, "free-only", tiersJSON("free"))
	premiumSvc := publish(t, ns, "premium-only", tiersJSON("premium"))
	publish(t, ns, "everyone", tiersJSON())
	publish(t, ns, "both", tiersJSON("free", "premium"))
	publish(t, ns, "enterprise-only", tiersJSON("enterprise"))
	publish(t, ns, "unpublished", "")

	alice := newUser(t, premiumUser, "premium-users")
	bob := newUser(t, freeUser)
	alice.waitModels(t, ns, ns+"/both", ns+"/everyone", ns+"/premium-only")
	bob.waitModels(t, ns, ns+"/both", ns+"/everyone", ns+"/free-only")

	// Across namespaces (kubectl get models -A): the same, among others'.
	all, err := alice.listModels(t, "")
	if err != nil {
		t.Fatal(err)
	}
	mine := slices.DeleteFunc(all, func(n string) bool { return !strings.HasPrefix(n, ns+"/") })
	if want := []string{ns + "/both", ns + "/everyone", ns + "/premium-only"}; !slices.Equal(mine, want) {
		t.Errorf("alice across namespaces sees %v in %s, want %v", mine, ns, want)
	}

	m := &modelv1alpha1.Model{}
	if err := alice.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "premium-only"}, m); err != nil {
		t.Fatal(err)
	}
	want := modelv1alpha1.Model{
		ObjectMeta: metav1.ObjectMeta{Name: "premium-only", Namespace: ns, UID: premiumSvc.UID, CreationTimestamp: premiumSvc.CreationTimestamp},
		Spec:       modelv1alpha1.ModelSpec{ModelName: "qwen-premium-only", Tiers: []string{"premium"}},
		Status: modelv1alpha1.ModelStatus{
			Ready: true, URL: premiumSvc.Status.URL,
			Addresses: []modelv1alpha1.ModelAddress{{Name: "gateway-external", URL: premiumSvc.Status.URL}},
		},
	}
	m.TypeMeta, m.ResourceVersion = metav1.TypeMeta{}, ""
	if diff := cmp.Diff(want, *m); diff != "" {
		t.Errorf("model premium-only (-want +got):\n%s", diff)
	}
	for _, name := range []string{"free-only", "enterprise-only", "unpublished", "absent"} {
		err := alice.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &modelv1alpha1.Model{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("alice gets model %s: %v, want NotFound", name, err)
		}
	}

	mallory := newUser(t, noRights, "premium-users")
	if _, err := mallory.listModels(t, ns); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot list resource "models"`) {
		t.Errorf("a user without RBAC lists models: %v, want 403 from RBAC", err)
	}
}

// TestModelsTable: the Table kubectl get asks for has NAME, MODEL, READY,
// URL and TIERS.
func TestModelsTable(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "table")
	publish(t, ns, "chat", tiersJSON())
	publish(t, ns, "code", tiersJSON("premium", "free"))
	alice := newUser(t, premiumUser, "premium-users")
	alice.waitModels(t, ns, ns+"/chat", ns+"/code")
	kube := kubernetes.NewForConfigOrDie(alice.cfg)
	raw, err := kube.RESTClient().Get().AbsPath("/apis", modelv1alpha1.GroupVersion.String(), "namespaces", ns, "models").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	var rows []string
	for _, r := range table.Rows {
		cells := make([]string, len(r.Cells))
		for i, c := range r.Cells {
			cells[i] = fmt.Sprint(c)
		}
		rows = append(rows, strings.Join(cells, " "))
	}
	gotCols, gotRows := fmt.Sprint(columns), strings.Join(rows, "\n")
	wantRows := fmt.Sprintf("chat qwen-chat true https://gw.example.com/%[1]s/chat <all>\ncode qwen-code true https://gw.example.com/%[1]s/code premium,free", ns)
	if gotCols != "[Name Model Ready URL Tiers]" || gotRows != wantRows {
		t.Errorf("table:\n got %s\n%s\nwant [Name Model Ready URL Tiers]\n%s", gotCols, gotRows, wantRows)
	}
}
