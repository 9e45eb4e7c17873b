package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// TestOwnWrites: after a write, a cache at another version is behind until
// it shows the written one; an expectation of "" is never met.
func TestOwnWrites(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	var w ownWrites
	if w.behind(key, "5") {
		t.Error("behind with no write")
	}
	w.wrote(&v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "7"}})
	if !w.behind(key, "5") {
		t.Error("a cache at 5 is not behind a write that returned 7")
	}
	if w.behind(types.NamespacedName{Namespace: "ns", Name: "b"}, "5") {
		t.Error("another service is behind")
	}
	if w.behind(key, "7") {
		t.Error("a cache at the written version is behind")
	}
	if w.behind(key, "5") {
		t.Error("the entry stayed after the cache caught up")
	}
	w.expect(key, "")
	if !w.behind(key, "9") {
		t.Error("an expectation of \"\" was met")
	}
	w.forget(key)
	if w.behind(key, "9") || len(w.rv) != 0 {
		t.Errorf("forget left %v", w.rv)
	}
}
