package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// kept is the number of compiled presets the cache holds.
func (c *presetCache) kept() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.byNamespace {
		n += len(m)
	}
	return n
}

// TestPresetCacheForgetsDeletedConfigs: a deleted config's compiled
// preset is dropped at the next listing of its namespace, or at once from
// its delete event; a config that did not change is not compiled again.
func TestPresetCacheForgetsDeletedConfigs(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	config := func(ns, name string) *v1alpha2.LLMInferenceServiceConfig {
		return &v1alpha2.LLMInferenceServiceConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	a, b, c := config("team", "a"), config("team", "b"), config("other", "c")
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, b, c).Build()
	pc := &presetCache{reader: cl, systemNamespace: "sys"}
	ctx := t.Context()
	if _, err := pc.catalog(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.catalog(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if got := pc.kept(); got != 3 {
		t.Fatalf("kept %d presets after listing three configs, want 3", got)
	}
	compiledA := pc.byNamespace["team"]["a"].preset

	if err := cl.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.catalog(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if got := pc.kept(); got != 2 {
		t.Errorf("kept %d presets after one of three configs was deleted and its namespace listed again, want 2", got)
	}
	if pc.byNamespace["team"]["a"].preset != compiledA {
		t.Error("an unchanged config was compiled again")
	}

	pc.forget("other", "c")
	if got := pc.kept(); got != 1 {
		t.Errorf("kept %d presets after a delete event, want 1", got)
	}
	if _, ok := pc.byNamespace["other"]; ok {
		t.Error("an emptied namespace is still kept")
	}
}
