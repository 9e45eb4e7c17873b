package kwokcluster_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// leaderWorkerSet is a LeaderWorkerSet of replicas groups of size pods,
// each asking for gpus GPUs.
func leaderWorkerSet(ns, name string, replicas, size int32, gpus int64) *lwsv1.LeaderWorkerSet {
	c := corev1.Container{Name: "main", Image: "example.invalid/model:1"}
	c.Resources.Limits = corev1.ResourceList{kwokcluster.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	return &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas:      ptr.To(replicas),
			StartupPolicy: lwsv1.LeaderCreatedStartupPolicy,
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
				Size: ptr.To(size),
				WorkerTemplate: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
				},
			},
		},
	}
}

// TestIntegrationLeaderWorkerSet: the LeaderWorkerSet operator runs. A
// LeaderWorkerSet of two groups of a leader and a worker with 8 GPUs each
// gets a leader StatefulSet and a worker StatefulSet per group, its four
// pods labelled by the operator's webhook and Running on the four GPU
// nodes, and the operator reports it Available. Deleting it, the garbage
// collector removes the StatefulSets and pods.
func TestIntegrationLeaderWorkerSet(t *testing.T) {
	nodes.Need(t)
	ns := namespace(t)
	l := leaderWorkerSet(ns, "mn", 2, 2, 8)
	if err := cp.Client.Create(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if l.Spec.NetworkConfig == nil || l.Spec.NetworkConfig.SubdomainPolicy == nil {
		t.Errorf("the LeaderWorkerSet was not defaulted by the operator's webhook: spec %+v", l.Spec)
	}
	testenv.Within(t, time.Minute, "four pods of mn Running and Ready on the four GPU nodes", func() error {
		ps := pods(t, ns, "mn")
		if len(ps) != 4 {
			return fmt.Errorf("%d pods, want 4", len(ps))
		}
		nodes := map[string]bool{}
		for _, p := range ps {
			ready := condition(&p, corev1.PodReady)
			if p.Status.Phase != corev1.PodRunning || ready == nil || ready.Status != corev1.ConditionTrue {
				return fmt.Errorf("pod %s: %s, Ready %v", p.Name, p.Status.Phase, ready)
			}
			if !strings.HasPrefix(p.Spec.NodeName, "kwok-gpu-") {
				return fmt.Errorf("pod %s on node %q", p.Name, p.Spec.NodeName)
			}
			nodes[p.Spec.NodeName] = true
		}
		if len(nodes) != 4 {
			return fmt.Errorf("pods on nodes %v, want the four GPU nodes", nodes)
		}
		return nil
	})
	// What the webhook adds: the group index, the worker index and the
	// group's hash, which the operator finds its groups by.
	for _, p := range pods(t, ns, "mn") {
		group, worker, hash := p.Labels[lwsv1.GroupIndexLabelKey], p.Labels[lwsv1.WorkerIndexLabelKey], p.Labels[lwsv1.GroupUniqueHashLabelKey]
		if group == "" || worker == "" || hash == "" {
			t.Errorf("pod %s lacks the operator's labels: group %q, worker %q, group hash %q", p.Name, group, worker, hash)
		}
	}
	testenv.Within(t, time.Minute, "LeaderWorkerSet mn Available with 2 ready groups", func() error {
		if err := cp.Client.Get(t.Context(), client.ObjectKeyFromObject(l), l); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(l.Status.Conditions, string(lwsv1.LeaderWorkerSetAvailable)) || l.Status.ReadyReplicas != 2 {
			return fmt.Errorf("status %+v", l.Status)
		}
		return nil
	})
	sets := statefulSets(t, ns, "mn")
	if len(sets) != 3 {
		t.Errorf("StatefulSets %v, want mn (the leaders) and mn-0, mn-1 (each group's worker)", sets)
	}

	if err := cp.Client.Delete(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	testenv.Within(t, time.Minute, "the garbage collector removes mn's StatefulSets and pods", func() error {
		if n, p := len(statefulSets(t, ns, "mn")), len(pods(t, ns, "mn")); n+p > 0 {
			return fmt.Errorf("%d StatefulSets and %d pods left", n, p)
		}
		return nil
	})
}

// statefulSets names the StatefulSets of the LeaderWorkerSet name.
func statefulSets(t *testing.T, ns, name string) []string {
	t.Helper()
	list := &appsv1.StatefulSetList{}
	if err := cp.Client.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels{lwsv1.SetNameLabelKey: name}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

// TestLWSWebhooksAreUpstreams compares the webhooks kwokcluster installs
// with the module's config/webhook: the same names, paths, rules, failure
// policies, side effects and pod object selectors (from its kustomize
// patches).
func TestLWSWebhooksAreUpstreams(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/lws").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/lws: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "webhook")
	type hook struct {
		Path           string
		Rules          []admissionv1.RuleWithOperations
		FailurePolicy  *admissionv1.FailurePolicyType
		SideEffects    *admissionv1.SideEffectClass
		ObjectSelector *metav1.LabelSelector
	}
	want := map[string]hook{}
	manifests := readFile(t, filepath.Join(dir, "manifests.yaml"))
	for _, doc := range strings.Split(manifests, "\n---\n") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		var cfg struct {
			Webhooks []admissionv1.ValidatingWebhook `json:"webhooks"`
		}
		if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
			t.Fatal(err)
		}
		for _, w := range cfg.Webhooks {
			want[w.Name] = hook{Path: *w.ClientConfig.Service.Path, Rules: w.Rules, FailurePolicy: w.FailurePolicy, SideEffects: w.SideEffects}
		}
	}
	for _, patch := range []string{"mutating-patch.yaml", "validating-patch.yaml"} {
		var ops []struct {
			Op, Path string
			Value    admissionv1.ValidatingWebhook
		}
		if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(dir, patch))), &ops); err != nil {
			t.Fatalf("%s: %v", patch, err)
		}
		for _, op := range ops {
			w := op.Value
			want[w.Name] = hook{Path: *w.ClientConfig.Service.Path, Rules: w.Rules, FailurePolicy: w.FailurePolicy, SideEffects: w.SideEffects, ObjectSelector: w.ObjectSelector}
		}
	}

	l := &kwokcluster.LWS{Port: 9443, CABundle: []byte("ca")}
	objs, err := l.WebhookConfigurations()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]hook{}
	var names []string
	add := func(name string, cc admissionv1.WebhookClientConfig, h hook) {
		if cc.Service != nil || cc.URL == nil || string(cc.CABundle) != "ca" {
			t.Errorf("webhook %s: client config %+v, want a URL and the CA", name, cc)
			return
		}
		h.Path = strings.TrimPrefix(*cc.URL, "https://127.0.0.1:9443")
		got[name] = h
	}
	for _, obj := range objs {
		names = append(names, obj.GetName())
		switch c := obj.(type) {
		case *admissionv1.MutatingWebhookConfiguration:
			for _, w := range c.Webhooks {
				add(w.Name, w.ClientConfig, hook{Rules: w.Rules, FailurePolicy: w.FailurePolicy, SideEffects: w.SideEffects, ObjectSelector: w.ObjectSelector})
			}
		case *admissionv1.ValidatingWebhookConfiguration:
			for _, w := range c.Webhooks {
				add(w.Name, w.ClientConfig, hook{Rules: w.Rules, FailurePolicy: w.FailurePolicy, SideEffects: w.SideEffects, ObjectSelector: w.ObjectSelector})
			}
		}
	}
	if !equality.Semantic.DeepEqual(names, kwokcluster.LWSWebhookConfigurations) {
		t.Errorf("configurations %v, want %v", names, kwokcluster.LWSWebhookConfigurations)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("webhooks differ from upstream's:\n got %+v\nwant %+v", got, want)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
