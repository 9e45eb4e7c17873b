// Package api registers the serving.kserve.io API versions. The types are in
// v1alpha1 (served) and v1alpha2 (stored, the conversion hub); the rules they
// must follow are in validation; their CRDs are in crds.
package api
