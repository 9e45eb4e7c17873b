package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package's kinds.
const GroupName = "modelserving.opendatahub.io"

// GroupVersion is the group and version of this package's kinds.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Kinds returns one new object of each kind of this package, lists included.
func Kinds() []runtime.Object {
	return []runtime.Object{
		&Model{}, &ModelList{},
		&TierReview{}, &TokenRequest{}, &TokenRevocation{},
	}
}

// AddToScheme registers this package's kinds, and the meta/v1 options
// kinds of the group version, with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, Kinds()...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
