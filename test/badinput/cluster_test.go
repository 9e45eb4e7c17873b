package badinput

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// namespacePrefix starts the name of every namespace the tests make
// (testenv.NewNamespace puts a dash after it).
const namespacePrefix = "bad"

// TestWebhook creates each case the webhook sees, in a namespace of its
// own: the create must fail with the case's message, and nothing at all may
// exist in the namespace afterwards (checkEmpty, once all cases ran). Cases
// the webhook accepts on purpose are created as a server-side dry run,
// which must pass. Cluster-scoped objects are compared before and after all
// cases.
func TestWebhook(t *testing.T) {
	before := clusterScoped(t)
	left := caseNamespaces{}
	for _, c := range loadCases(t) {
		if !slices.Contains(entries[c.category], entryWebhook) {
			continue
		}
		if reason, skip := c.skipped[entryWebhook]; skip {
			t.Logf("%s: not sent to the webhook: %s", c.name, reason)
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			objs := servingObjects(t, c)
			ns := left.add(t, c.name)
			if _, accepted := c.accepted[entryWebhook]; accepted {
				for _, o := range objs {
					o.SetNamespace(ns)
					if err := cp.Client.Create(t.Context(), o, client.DryRunAll); err != nil {
						t.Errorf("the case says the webhook accepts %s %s (%s), but: %v", o.GetKind(), o.GetName(), c.accepted[entryWebhook], err)
					}
				}
				return
			}
			if len(objs) != 1 {
				t.Fatalf("a case the webhook rejects holds one serving.kserve.io object; this one holds %d", len(objs))
			}
			o := objs[0]
			o.SetNamespace(ns)
			want, _ := c.wants(entryWebhook)
			err := cp.Client.Create(t.Context(), o)
			if err == nil {
				t.Fatalf("created %s %s; want the rejection %q", o.GetKind(), o.GetName(), want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, want)
			}
		})
	}
	checkEmpty(t, left, "a rejected input")
	if diff := diffSnapshots(before, clusterScoped(t)); diff != "" {
		t.Errorf("cluster-scoped objects changed while bad inputs were sent:\n%s", diff)
	}
}

// TestHelmInstall installs charts/odh-serving with each bad values file:
// helm must refuse with the message, and leave nothing behind: no release,
// no object in the namespace (checkEmpty, once all cases ran), no
// cluster-scoped object.
func TestHelmInstall(t *testing.T) {
	kubeconfig := testenv.Kubeconfig(t, cp.Config, "")
	before := clusterScoped(t)
	left := caseNamespaces{}
	eachCase(t, entryHelmInstall, func(t *testing.T, c *badCase, want string) {
		t.Helper()
		ns := left.add(t, c.name)
		helm := testenv.HelmFor(t, "helm", kubeconfig)
		out, err := helm.Run(t.Context(), "install", "odh-serving", "../../charts/odh-serving", "--namespace", ns, "-f", c.file)
		if err == nil {
			t.Fatalf("helm install succeeded; want %q\n%s", want, out)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("helm said:\n%v\nwant it to contain:\n%s", err, want)
		}
	})
	checkEmpty(t, left, "a refused install")
	if diff := diffSnapshots(before, clusterScoped(t)); diff != "" {
		t.Errorf("cluster-scoped objects changed while bad values were installed:\n%s", diff)
	}
}

// servingObjects decodes the serving.kserve.io objects of a case the way a
// client sends them: leniently, so the API server and the webhook judge them.
func servingObjects(t *testing.T, c *badCase) []*unstructured.Unstructured {
	t.Helper()
	docs, err := manifest.Split(c.file, c.data)
	if err != nil {
		t.Fatalf("the case cannot be sent to the API server (mark it skip[webhook]): %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		if d.Object.GroupVersionKind().Group == v1alpha2.GroupVersion.Group {
			objs = append(objs, d.Object)
		}
	}
	if len(objs) == 0 {
		t.Fatal("the case holds no serving.kserve.io object")
	}
	return objs
}

// discovered caches what the API server serves; the set does not change
// while the tests run.
var discovered = sync.OnceValues(func() ([]*metav1.APIResourceList, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	return dc.ServerPreferredResources()
})

// listable returns every resource type the API server can list, namespaced
// or cluster-scoped.
func listable(t *testing.T, namespaced bool) []schema.GroupVersionResource {
	t.Helper()
	lists, err := discovered()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if r.Namespaced == namespaced && slices.Contains(r.Verbs, "list") && !strings.Contains(r.Name, "/") {
				out = append(out, gv.WithResource(r.Name))
			}
		}
	}
	return out
}

// caseNamespaces maps the namespace each case ran in to the case's name.
type caseNamespaces map[string]string

// add makes a namespace of its own for the case.
func (m caseNamespaces) add(t *testing.T, name string) string {
	t.Helper()
	ns := testenv.NewNamespace(t, cp.Client, namespacePrefix)
	m[ns] = name
	return ns
}

// checkEmpty lists every namespaced kind, in all namespaces, and fails on
// any object in a case's namespace, naming the case. It runs once after
// the cases, one List per kind rather than one per kind and case: nothing
// here deletes an object (envtest runs no garbage collector and no
// namespace controller, and the namespaces stay), so whatever a case left
// is still there at the end.
func checkEmpty(t *testing.T, cases caseNamespaces, what string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	kinds := 0
	for _, gvr := range listable(t, true) {
		list, err := dyn.Resource(gvr).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %s: %v", gvr, err)
		}
		kinds++
		for _, o := range list.Items {
			if name, ok := cases[o.GetNamespace()]; ok {
				t.Errorf("%s: %s left %s %s/%s", name, what, gvr.Resource, o.GetNamespace(), o.GetName())
			}
		}
	}
	if kinds < 20 {
		t.Fatalf("listed only %d kinds; discovery is incomplete", kinds)
	}
}

// clusterScoped names every cluster-scoped object, as "resource name",
// except the namespaces the tests make and the API server's own flow
// control objects.
func clusterScoped(t *testing.T) []string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, gvr := range listable(t, false) {
		if gvr.Group == "flowcontrol.apiserver.k8s.io" {
			continue
		}
		list, err := dyn.Resource(gvr).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %s: %v", gvr, err)
		}
		for _, o := range list.Items {
			if gvr.Resource == "namespaces" && strings.HasPrefix(o.GetName(), namespacePrefix) {
				continue
			}
			names = append(names, fmt.Sprintf("%s %s", gvr.GroupResource(), o.GetName()))
		}
	}
	slices.Sort(names)
	return names
}

func diffSnapshots(before, after []string) string {
	var b strings.Builder
	for _, n := range after {
		if !slices.Contains(before, n) {
			b.WriteString("+ " + n + "\n")
		}
	}
	for _, n := range before {
		if !slices.Contains(after, n) {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}
