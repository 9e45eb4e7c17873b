package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper answers every kind as namespaced, except kinds named
// Missing, and counts the questions.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	if gk.Kind == "Missing" {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return &meta.RESTMapping{GroupVersionKind: gk.WithVersion(versions[0]), Scope: meta.RESTScopeNamespace}, nil
}

func TestBuiltinMappings(t *testing.T) {
	for _, tc := range []struct {
		gk        schema.GroupKind
		wantAsked int
	}{
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, 1},
		{schema.GroupKind{Kind: "Secret"}, 1},
		// A CRD's group: asked every time.
		{schema.GroupKind{Group: "inference.networking.k8s.io", Kind: "InferencePool"}, 3},
		// A failure is not remembered.
		{schema.GroupKind{Group: "apps", Kind: "Missing"}, 3},
	} {
		d := &countingMapper{}
		m := &builtinMappings{RESTMapper: d, known: map[schema.GroupVersionKind]meta.RESTMapping{}}
		for range 3 {
			got, err := m.RESTMapping(tc.gk, "v1")
			if tc.gk.Kind == "Missing" {
				if !meta.IsNoMatchError(err) {
					t.Errorf("%s: error %v, want a NoMatch error", tc.gk, err)
				}
				continue
			}
			if err != nil || got.GroupVersionKind != tc.gk.WithVersion("v1") || got.Scope.Name() != meta.RESTScopeNameNamespace {
				t.Fatalf("%s: got %+v, %v", tc.gk, got, err)
			}
			got.Scope = meta.RESTScopeRoot // a caller's copy
		}
		if d.asked != tc.wantAsked {
			t.Errorf("%s: the dynamic mapper was asked %d times, want %d", tc.gk, d.asked, tc.wantAsked)
		}
	}
}
