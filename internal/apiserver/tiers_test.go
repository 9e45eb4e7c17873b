package apiserver

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/tiertest"
)

// startTiers runs a tierSource over kube until the test ends, and waits
// until it has read the informer's first list.
func startTiers(t *testing.T, kube *fake.Clientset, prefix string) *tierSource {
	t.Helper()
	o := NewOptions()
	o.Tiers = tier.Source{ConfigMapNamespace: tiertest.Namespace, ConfigMapName: tiertest.Name, NamespacePrefix: prefix}
	s, err := newTierSource(kube, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if !cache.WaitForCacheSync(t.Context().Done(), s.loaded.Load) {
		t.Fatal("the tier informer did not sync")
	}
	return s
}

// TestTierConfigMapErrors: under a bad tier ConfigMap every request that
// needs a tier fails with a 503 carrying tier.FromConfigMap's error for
// that ConfigMap, as the controller's and offline render's errors do
// (tiertest.Bad is their table too). A ConfigMap missing from the start
// is reported missing, not "not read yet".
func TestTierConfigMapErrors(t *testing.T) {
	const prefix = "acme-tier-"
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	for _, tc := range tiertest.Bad() {
		t.Run(tc.Name, func(t *testing.T) {
			var objs []runtime.Object
			if cm := tc.ConfigMap(); cm != nil {
				objs = append(objs, cm)
			}
			s := startTiers(t, fake.NewClientset(objs...), prefix)
			if err := s.config().err; !errors.Is(err, tc.Err) {
				t.Errorf("tier configuration error %v, want it to wrap %v", err, tc.Err)
			}
			want := tc.Want(prefix).Error()
			_, err := s.userTier(alice, "tierreviews")
			if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), want) {
				t.Errorf("userTier: %v, want a 503 containing %q", err, want)
			}
		})
	}
}

// TestTierInformerScope: the informer lists and watches the tier
// ConfigMap's namespace only, by the ConfigMap's name.
func TestTierInformerScope(t *testing.T) {
	good := tiertest.Case{Data: map[string]string{tier.ConfigMapKey: "- {name: free, groups: [system:authenticated]}"}}.ConfigMap()
	kube := fake.NewClientset(good)
	s := startTiers(t, kube, "")
	if _, err := s.userTier(&user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}, "tierreviews"); err != nil {
		t.Fatalf("userTier: %v", err)
	}
	var verbs []string
	for _, a := range kube.Actions() {
		if a.GetResource().Resource != "configmaps" {
			continue
		}
		verbs = append(verbs, a.GetVerb())
		var fields string
		switch a := a.(type) {
		case k8stesting.ListAction:
			fields = a.GetListRestrictions().Fields.String()
		case k8stesting.WatchAction:
			fields = a.GetWatchRestrictions().Fields.String()
		}
		if a.GetNamespace() != tiertest.Namespace || fields != "metadata.name="+tiertest.Name {
			t.Errorf("%s configmaps in namespace %q with fields %q, want namespace %s and metadata.name=%s",
				a.GetVerb(), a.GetNamespace(), fields, tiertest.Namespace, tiertest.Name)
		}
	}
	if !strings.Contains(strings.Join(verbs, ","), "list") {
		t.Errorf("configmap actions %v, want a list", verbs)
	}
}
