// Package crds embeds the CustomResourceDefinitions odh-serving serves and
// the third-party ones it installs or tests against.
//
// The serving.kserve.io CRDs are generated from the Go types in ../v1alpha1
// and ../v1alpha2 by `make generate`. The files under thirdparty/ are copied
// from the pinned Go modules by `make sync-crds`. Neither is edited by hand.
package crds
