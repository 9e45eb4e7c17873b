package api

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/opendatahub-io/odh-serving/api/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// AddToScheme registers both versions of the serving.kserve.io API.
func AddToScheme(s *runtime.Scheme) error {
	if err := v1alpha2.AddToScheme(s); err != nil {
		return err
	}
	return v1alpha1.AddToScheme(s)
}
