package chart

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var gvkHPA = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}

// replicasSeen records the spec.replicas of every version of one
// Deployment the API server stores, from a watch.
type replicasSeen struct {
	mu     sync.Mutex
	seen   []int32
	latest string // the resourceVersion of the last version seen
	err    error
	done   chan struct{}
}

// watchReplicas watches the Deployment namespace/name (which need not exist
// yet) until the test ends.
func watchReplicas(t *testing.T, namespace, name string) *replicasSeen {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	w, err := cs.AppsV1().Deployments(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		cancel()
		t.Fatalf("watch Deployment %s/%s: %v", namespace, name, err)
	}
	r := &replicasSeen{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*appsv1.Deployment)
			r.mu.Lock()
			switch {
			case !ok:
				r.err = fmt.Errorf("watch event %s: %T", ev.Type, ev.Object)
			case d.Spec.Replicas != nil:
				r.seen = append(r.seen, *d.Spec.Replicas)
				r.latest = d.ResourceVersion
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-r.done
	})
	return r
}

// upTo waits until the watch has delivered the Deployment's version
// resourceVersion, and returns every count seen so far.
func (r *replicasSeen) upTo(t *testing.T, resourceVersion string) []int32 {
	t.Helper()
	var seen []int32
	testenv.Eventually(t, "the watch delivers resourceVersion "+resourceVersion, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.err != nil {
			return r.err
		}
		if r.latest != resourceVersion {
			return fmt.Errorf("the last version seen is %q", r.latest)
		}
		seen = slices.Clone(r.seen)
		return nil
	})
	return seen
}

// TestStaticUpgradeAddsScaling: in static mode a service runs 3 decode
// replicas; the helm upgrade that adds scaling (minReplicas 2, maxReplicas
// 5) renders the decode Deployment without spec.replicas. Every version of
// the Deployment the API server stores through the install and the
// upgrade keeps at least 3 replicas (the live count, above minReplicas):
// the chart's replicas webhook keeps the count Helm's three-way merge would
// remove (one replica until the autoscaler acts). The autoscaler's own
// scale, through the scale subresource, then passes and stays through a
// later upgrade.
func TestStaticUpgradeAddsScaling(t *testing.T) {
	ns := testenv.NewNamespace(t, cp.Client, "odh")
	uninstallOnFailure(t, ns)
	// A service of its own (the values file's chat sets replicas, which
	// scaling excludes and no --set can take away).
	const decode = "scaled-kserve"
	seen := watchReplicas(t, ns, decode)
	service := func(replicasOrScaling string) []string {
		return []string{"--set-json", `services.scaled={"spec":{"model":{"uri":"hf://Qwen/Qwen3-0.6B"},` +
			`"baseRefs":[{"name":"kserve-config-llm-cpu-simulator"}],"router":{"route":{},"gateway":{},"scheduler":{}},` + replicasOrScaling + `}}`}
	}
	scaling := func(maxReplicas int) []string {
		return append(append([]string{"upgrade"}, staticInstall(t, ns)...),
			service(fmt.Sprintf(`"scaling":{"minReplicas":2,"maxReplicas":%d,"wva":{"hpa":{}}}`, maxReplicas))...)
	}
	helm.Must(t, append(append([]string{"install"}, staticInstall(t, ns)...), service(`"replicas":3`)...)...)
	helm.Must(t, scaling(5)...)

	d := &appsv1.Deployment{}
	if err := cp.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: decode}, d); err != nil {
		t.Fatal(err)
	}
	mustExist(t, gvkHPA, ns, decode+"-hpa") // the upgrade added scaling
	counts := seen.upTo(t, d.ResourceVersion)
	t.Logf("spec.replicas of every version of the decode Deployment through the install and the upgrade: %v", counts)
	if len(counts) < 2 {
		t.Errorf("the watch saw %d versions of the decode Deployment, want the install's and the upgrade's", len(counts))
	}
	for _, n := range counts {
		if n < 3 {
			t.Errorf("through the upgrade that adds scaling the decode Deployment had %d replicas (every count seen: %v), want never below the live 3 (minReplicas 2)", n, counts)
			break
		}
	}

	// The autoscaler scales to 5, through the scale subresource, as
	// kube-controller-manager does; a later upgrade leaves its count.
	s := &autoscalingv1.Scale{}
	if err := cp.Client.SubResource("scale").Get(t.Context(), d, s); err != nil {
		t.Fatal(err)
	}
	s.Spec.Replicas = 5
	if err := cp.Client.SubResource("scale").Update(t.Context(), d, client.WithSubResourceBody(s), client.FieldOwner("kube-controller-manager")); err != nil {
		t.Fatalf("the autoscaler's scale of the decode Deployment: %v", err)
	}
	helm.Must(t, scaling(6)...)
	if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 5 {
		t.Errorf("after a later upgrade the decode Deployment has %d replicas, want the autoscaler's 5", *d.Spec.Replicas)
	}
	helm.Must(t, "uninstall", "odh-serving", "-n", ns)
}
