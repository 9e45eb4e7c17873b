package apiserver

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
)

// tierReviewStorage answers tierreviews: the tier of spec.groups.
type tierReviewStorage struct {
	clusterScoped
	tiers *tierSource
}

// query is the storage of a cluster-scoped, create-only kind answered
// on create, like TokenReview.
type query interface {
	rest.Creater //nolint:misspell // k8s.io/apiserver spells it so
	rest.Scoper
	rest.SingularNameProvider
}

// clusterScoped gives a query storage its scope and its (empty) Destroy.
type clusterScoped struct{}

func (clusterScoped) Destroy()              {}
func (clusterScoped) NamespaceScoped() bool { return false }

var _ query = &tierReviewStorage{}

func (*tierReviewStorage) New() runtime.Object     { return &modelv1alpha1.TierReview{} }
func (*tierReviewStorage) GetSingularName() string { return "tierreview" }

// Create fills in the review's status. Groups that no tier lists are an
// answer (status.error), not a failure; an unusable tier configuration is
// a 503.
func (s *tierReviewStorage) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*modelv1alpha1.TierReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TierReview: %T", obj))
	}
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return nil, err
		}
	}
	t, err := s.tiers.config().resolve(review.Spec.Groups)
	switch {
	case errors.Is(err, errNoTier):
		review.Status = modelv1alpha1.TierReviewStatus{Error: fmt.Sprintf("%s: none of the groups %v is listed in %s", err, review.Spec.Groups, s.tiers.what)}
	case err != nil:
		return nil, apierrors.NewServiceUnavailable("the MaaS tier configuration is unusable: " + err.Error())
	default:
		review.Status = modelv1alpha1.TierReviewStatus{Tier: t.Name, DisplayName: t.DisplayName, Level: int64(t.Level)}
	}
	return review, nil
}
