package apiserver

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// review creates a TierReview of groups as u.
func (u *user) review(t *testing.T, groups ...string) (*modelv1alpha1.TierReview, error) {
	t.Helper()
	r := &modelv1alpha1.TierReview{Spec: modelv1alpha1.TierReviewSpec{User: "someone", Groups: groups}}
	r.GenerateName = "review-"
	// Without cancel: TestBadTierConfig reviews in its Cleanup.
	err := u.c.Create(context.WithoutCancel(t.Context()), r)
	return r, err
}

// TestTierReviews: the highest level wins, a tie goes to the first listed,
// a tier's ServiceAccount group counts, no match is status.error, and
// without RBAC the review is 403.
func TestTierReviews(t *testing.T) {
	gateway := newUser(t, gatewayUser)
	for name, tc := range map[string]struct {
		groups []string
		want   modelv1alpha1.TierReviewStatus
	}{
		"authenticated only is free": {
			groups: []string{"system:authenticated"},
			want:   modelv1alpha1.TierReviewStatus{Tier: "free", DisplayName: "Free"},
		},
		"premium over free by level": {
			groups: []string{"system:authenticated", "premium-users"},
			want:   modelv1alpha1.TierReviewStatus{Tier: "premium", DisplayName: "Premium", Level: 10},
		},
		"tie on level 10: premium is listed first": {
			groups: []string{"partner-users", "premium-users"},
			want:   modelv1alpha1.TierReviewStatus{Tier: "premium", DisplayName: "Premium", Level: 10},
		},
		"enterprise, listed last, has the highest level": {
			groups: []string{"enterprise-users", "partner-users", "system:authenticated"},
			want:   modelv1alpha1.TierReviewStatus{Tier: "enterprise", DisplayName: "Enterprise", Level: 20},
		},
		"a minted token's namespace group": {
			groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + tierPrefix + "partner"},
			want:   modelv1alpha1.TierReviewStatus{Tier: "partner", DisplayName: "Partner", Level: 10},
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := gateway.review(t, tc.groups...)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.want {
				t.Errorf("tier of %v: got %+v, want %+v", tc.groups, r.Status, tc.want)
			}
		})
	}

	r, err := gateway.review(t, "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status.Tier != "" || !strings.Contains(r.Status.Error, "no tier lists any of the groups") || !strings.Contains(r.Status.Error, systemNS+"/"+tier.ConfigMapName) {
		t.Errorf("groups in no tier: status %+v, want an error naming the ConfigMap", r.Status)
	}

	// As `kubectl create -f` sends docs/maas.md's example: no metadata.
	raw, err := kubernetes.NewForConfigOrDie(gateway.cfg).RESTClient().Post().AbsPath("/apis", modelv1alpha1.GroupVersion.String(), "tierreviews").
		Body([]byte(`{"apiVersion":"modelserving.opendatahub.io/v1alpha1","kind":"TierReview","spec":{"groups":["premium-users"]}}`)).DoRaw(t.Context())
	if err != nil || !strings.Contains(string(raw), `"tier":"premium"`) {
		t.Errorf("a TierReview without metadata: %v %s", err, raw)
	}

	mallory := newUser(t, noRights, "system:masters-not")
	if _, err := mallory.review(t, "premium-users"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot create resource "tierreviews"`) {
		t.Errorf("a user without RBAC creates a tierreview: %v, want 403 from RBAC", err)
	}
}
