package apiserver

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
)

// query is the storage of a cluster-scoped, create-only kind answered on
// create, like TokenReview: nothing is stored. E is the kind's type.
type query[E any, T interface {
	*E
	runtime.Object
}] struct {
	kind   string
	answer answer[T]
}

// answer fills in the posted object obj, after the create validation of
// the handler chain (validate) admits it.
type answer[T runtime.Object] func(ctx context.Context, obj T, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error)

// newQuery is the storage of the kind whose objects a answers.
func newQuery[E any, T interface {
	*E
	runtime.Object
}](a answer[T]) *query[E, T] {
	return &query[E, T]{kind: reflect.TypeFor[E]().Name(), answer: a}
}

var _ interface {
	rest.Storage
	rest.Creater //nolint:misspell // k8s.io/apiserver spells it so
	rest.Scoper
	rest.SingularNameProvider
} = &query[modelv1alpha1.TierReview, *modelv1alpha1.TierReview]{}

func (*query[E, T]) New() runtime.Object       { return T(new(E)) }
func (*query[E, T]) Destroy()                  {}
func (*query[E, T]) NamespaceScoped() bool     { return false }
func (q *query[E, T]) GetSingularName() string { return strings.ToLower(q.kind) }

// Create answers the posted object.
func (q *query[E, T]) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	o, ok := obj.(T)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a %s: %T", q.kind, obj))
	}
	return q.answer(ctx, o, validate, opts)
}

// review answers a tierreview: it fills in the tier of spec.groups. Groups
// that no tier lists are an answer (status.error), not a failure; an
// unusable tier configuration is a 503.
func (s *tierSource) review(ctx context.Context, review *modelv1alpha1.TierReview, validate rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	if validate != nil {
		if err := validate(ctx, review); err != nil {
			return nil, err
		}
	}
	t, err := s.config().resolve(review.Spec.Groups)
	switch {
	case errors.Is(err, errNoTier):
		review.Status = modelv1alpha1.TierReviewStatus{Error: fmt.Sprintf("%s: none of the groups %v is listed in %s", err, review.Spec.Groups, s.what)}
	case err != nil:
		return nil, apierrors.NewServiceUnavailable("the MaaS tier configuration is unusable: " + err.Error())
	default:
		review.Status = modelv1alpha1.TierReviewStatus{Tier: t.Name, DisplayName: t.DisplayName, Level: int64(t.Level)}
	}
	return review, nil
}
