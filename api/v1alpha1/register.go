package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this package's kinds.
var GroupVersion = schema.GroupVersion{Group: "serving.kserve.io", Version: "v1alpha1"}

// AddToScheme registers this package's kinds with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&LLMInferenceService{}, &LLMInferenceServiceList{},
		&LLMInferenceServiceConfig{}, &LLMInferenceServiceConfigList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
