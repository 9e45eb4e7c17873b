package apiserver

import (
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// newClient is a client of cfg that knows the modelserving kinds.
func newClient(tb testing.TB, cfg *rest.Config) client.Client {
	tb.Helper()
	return testenv.NewClient(tb, cfg, modelv1alpha1.AddToScheme, v1alpha2.AddToScheme, corev1.AddToScheme)
}

// user is a test user: its client and the warnings its responses carried.
type user struct {
	name     string
	c        client.Client
	cfg      *rest.Config
	warnings *warnings
}

func newUser(tb testing.TB, name string, groups ...string) *user {
	tb.Helper()
	cfg, w := userConfig(tb, name, groups...)
	return &user{name: name, c: newClient(tb, cfg), cfg: cfg, warnings: w}
}

// publish creates a ready LLMInferenceService in ns with the tier
// annotation tiers (none when empty), its status as a controller would
// write it.
func publish(tb testing.TB, ns, name, tiers string) *v1alpha2.LLMInferenceService {
	tb.Helper()
	svc := &v1alpha2.LLMInferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha2.LLMInferenceServiceSpec{Model: v1alpha2.LLMModelSpec{URI: "hf://Qwen/Qwen2.5-0.5B-Instruct", Name: ptr.To("qwen-" + name)}},
	}
	if tiers != "" {
		svc.Annotations = map[string]string{tier.AnnotationTiers: tiers}
	}
	ctx := tb.Context()
	if err := cp.Client.Create(ctx, svc); err != nil {
		tb.Fatalf("create service %s/%s: %v", ns, name, err)
	}
	svc.Status = v1alpha2.LLMInferenceServiceStatus{
		URL:       fmt.Sprintf("https://gw.example.com/%s/%s", ns, name),
		Addresses: []v1alpha2.Address{{Name: "gateway-external", URL: fmt.Sprintf("https://gw.example.com/%s/%s", ns, name)}},
		Conditions: []metav1.Condition{{
			Type: v1alpha2.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now(),
		}},
	}
	if err := cp.Client.Status().Update(ctx, svc); err != nil {
		tb.Fatalf("status of service %s/%s: %v", ns, name, err)
	}
	return svc
}

// tiersJSON is the annotation value listing tiers.
func tiersJSON(tiers ...string) string {
	if tiers == nil {
		tiers = []string{}
	}
	b, _ := json.Marshal(tiers)
	return string(b)
}

// listModels lists the models u sees in ns (every namespace when empty),
// as namespace/name.
func (u *user) listModels(tb testing.TB, ns string) ([]string, error) {
	tb.Helper()
	list := &modelv1alpha1.ModelList{}
	if err := u.c.List(tb.Context(), list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	names := make([]string, len(list.Items))
	for i, m := range list.Items {
		names[i] = m.Namespace + "/" + m.Name
	}
	return names, nil
}

// waitModels waits until u sees exactly want in ns (the server's cache
// follows the services within moments).
func (u *user) waitModels(tb testing.TB, ns string, want ...string) {
	tb.Helper()
	testenv.Eventually(tb, u.name+" lists models in "+ns, func() error {
		got, err := u.listModels(tb, ns)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("sees %v, want %v", got, want)
		}
		return nil
	})
}
