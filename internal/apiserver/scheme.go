package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
)

// newScheme returns the scheme the generic server decodes and encodes
// with. There is one version and nothing is stored, so the versioned Go
// types are registered as the group's internal version too: converting
// between the two only sets the kind (runtime.Scheme does no conversion
// when the Go type is registered under the target version).
func newScheme() (*runtime.Scheme, serializer.CodecFactory, error) {
	s := runtime.NewScheme()
	if err := modelv1alpha1.AddToScheme(s); err != nil {
		return nil, serializer.CodecFactory{}, err
	}
	s.AddKnownTypes(schema.GroupVersion{Group: modelv1alpha1.GroupName, Version: runtime.APIVersionInternal}, modelv1alpha1.Kinds()...)
	// The unversioned meta kinds every API server answers with.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{},
	)
	return s, serializer.NewCodecFactory(s), nil
}
