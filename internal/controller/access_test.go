package controller

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/tiertest"
)

// TestTierConfigMapErrors: a published service under a bad tier ConfigMap
// binds no tier, and its access error is tier.FromConfigMap's for that
// ConfigMap, as the MaaS API server's and offline render's are
// (tiertest.Bad is their table too).
func TestTierConfigMapErrors(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "acme-tier-"
	for _, tc := range tiertest.Bad() {
		t.Run(tc.Name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme)
			if cm := tc.ConfigMap(); cm != nil {
				b.WithObjects(cm)
			}
			r := &Reconciler{tiers: &tierSource{
				reader: b.Build(), prefix: prefix,
				key: types.NamespacedName{Namespace: tiertest.Namespace, Name: tiertest.Name},
			}}
			p := &pass{svc: &v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{
				Namespace: "team", Name: "chat", Annotations: map[string]string{tier.AnnotationTiers: `["free"]`},
			}}}
			cfg, err := r.tiersFor(t.Context(), p)
			if cfg != nil || err != nil {
				t.Fatalf("tiersFor: %v, %v; want no tier list and no error to retry", cfg, err)
			}
			want := tc.Want(prefix).Error()
			if !errors.Is(p.accessErr, tc.Err) || !strings.Contains(p.accessErr.Error(), want) {
				t.Errorf("access error %v, want it to wrap %v and contain %q", p.accessErr, tc.Err, want)
			}
			if p.accessReason != ReasonInvalidTierConfig {
				t.Errorf("reason %s, want %s", p.accessReason, ReasonInvalidTierConfig)
			}
		})
	}
}
