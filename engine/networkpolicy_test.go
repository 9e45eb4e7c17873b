package engine_test

import (
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// renderedPod is the labels of a pod template the engine rendered, and
// the workload it belongs to.
type renderedPod struct {
	workload string // the Deployment or LeaderWorkerSet
	labels   labels.Set
}

// TestNetworkPoliciesSelectTheirPods renders every golden case and checks
// each NetworkPolicy's selectors against the labels of the pod templates
// rendered with it (a local cluster enforces no NetworkPolicy, so this is
// where a selector that matches no pod, or the wrong one, is caught):
//   - every workload has exactly one policy, named as it, whose podSelector
//     matches all its pod templates (leader and worker) and no other pod;
//   - the peer for the service's own pods matches every serving pod and not
//     the endpoint picker's;
//   - the peer for the endpoint picker matches its pods and nothing else.
func TestNetworkPoliciesSelectTheirPods(t *testing.T) {
	checked := 0
	for _, in := range golden.Glob(t, "testdata/*/input.yaml") {
		dir := filepath.Dir(in)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			docs, err := manifest.Split(dir, renderCase(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			// Per service (namespace/name label): its pods and policies.
			pods := map[string][]renderedPod{}
			policies := map[string][]*networkingv1.NetworkPolicy{}
			for _, d := range docs {
				u := d.Object
				svc := u.GetNamespace() + "/" + u.GetLabels()[convention.LabelName]
				switch u.GetKind() {
				case "Deployment":
					o := &appsv1.Deployment{}
					fromUnstructured(t, u.Object, o)
					pods[svc] = append(pods[svc], renderedPod{o.Name, o.Spec.Template.Labels})
				case "LeaderWorkerSet":
					o := &lwsv1.LeaderWorkerSet{}
					fromUnstructured(t, u.Object, o)
					if l := o.Spec.LeaderWorkerTemplate.LeaderTemplate; l != nil {
						pods[svc] = append(pods[svc], renderedPod{o.Name, l.Labels})
					}
					pods[svc] = append(pods[svc], renderedPod{o.Name, o.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels})
				case "NetworkPolicy":
					o := &networkingv1.NetworkPolicy{}
					fromUnstructured(t, u.Object, o)
					policies[svc] = append(policies[svc], o)
				}
			}
			for svc := range pods {
				checked += checkPolicies(t, pods[svc], policies[svc])
			}
		})
	}
	if checked < 40 {
		t.Errorf("checked %d NetworkPolicies across the golden cases; expected at least 40", checked)
	}
}

func fromUnstructured(t *testing.T, u map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, into); err != nil {
		t.Fatal(err)
	}
}

// serving reports whether a pod runs a model server (not the endpoint
// picker).
func serving(p renderedPod) bool {
	return p.labels[convention.LabelComponent] != build.ComponentScheduler
}

// checkPolicies checks the policies of one service against its pods and
// returns how many it checked.
func checkPolicies(t *testing.T, pods []renderedPod, policies []*networkingv1.NetworkPolicy) int {
	t.Helper()
	matching := func(sel *metav1.LabelSelector) (workloads []string, matched []renderedPod) {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if s.Matches(p.labels) {
				workloads, matched = append(workloads, p.workload), append(matched, p)
			}
		}
		return workloads, matched
	}
	servingPods := 0
	for _, p := range pods {
		if !serving(p) {
			continue
		}
		servingPods++
		if !slices.ContainsFunc(policies, func(np *networkingv1.NetworkPolicy) bool { return np.Name == p.workload }) {
			t.Errorf("workload %s has no NetworkPolicy", p.workload)
		}
	}
	for _, np := range policies {
		got, _ := matching(&np.Spec.PodSelector)
		want := 0
		for _, p := range pods {
			if p.workload == np.Name {
				want++
			}
		}
		if want == 0 || len(got) != want || slices.ContainsFunc(got, func(w string) bool { return w != np.Name }) {
			t.Errorf("NetworkPolicy %s selects the pods of %v; want the %d pod templates of workload %s", np.Name, got, want, np.Name)
		}
		if len(np.Spec.Ingress) != 2 {
			t.Fatalf("NetworkPolicy %s has %d ingress rules, want 2 (the model server ports, the service's own pods)", np.Name, len(np.Spec.Ingress))
		}
		own := np.Spec.Ingress[1].From
		if len(own) != 1 || own[0].PodSelector == nil || own[0].NamespaceSelector != nil {
			t.Fatalf("NetworkPolicy %s: the second rule must be one pod selector (the service's own pods): %+v", np.Name, own)
		}
		if _, matched := matching(own[0].PodSelector); len(matched) != servingPods || slices.ContainsFunc(matched, func(p renderedPod) bool { return !serving(p) }) {
			t.Errorf("NetworkPolicy %s: the own-pods peer matches %d pods; want the %d serving pods and no other", np.Name, len(matched), servingPods)
		}
		for _, peer := range np.Spec.Ingress[0].From {
			if peer.PodSelector == nil || len(peer.PodSelector.MatchLabels)+len(peer.PodSelector.MatchExpressions) == 0 {
				continue // namespaces, or the whole namespace (an endpoint picker not the service's)
			}
			if _, matched := matching(peer.PodSelector); len(matched) == 0 || slices.ContainsFunc(matched, serving) {
				t.Errorf("NetworkPolicy %s: the endpoint picker peer matches %d pods, some serving; want the endpoint picker's pods only", np.Name, len(matched))
			}
		}
	}
	return len(policies)
}
