// Package crdlifecycle installs, reports on and removes the
// CustomResourceDefinitions odh-serving owns.
//
// The GIE CRDs, every one the pinned GIE release ships (the v1
// InferencePool, the v1alpha2 InferencePool while a migration needs it,
// InferenceObjective, InferenceModelRewrite and InferencePoolImport), are
// embedded from api/crds. Apply server-side applies them under field manager odh-serving,
// labelled app.kubernetes.io/managed-by: odh-serving, as ODH's ADR MS-0002
// has model serving own them. Three rules keep it safe to run on every
// start:
//
//   - One owner: a live CRD that a Helm release installed (the
//     odh-serving-crds chart, whose createGIECRDs is on by default) is left
//     to that release, which upgrades it. The chart is the default owner;
//     Apply only creates the CRDs no one installed and keeps up to date
//     those it created, so each CRD has one field manager and helm upgrade
//     never meets a field the controller took.
//   - Bundle-version gate: a live CRD whose
//     inference.networking.k8s.io/bundle-version (or llm-d.ai/bundle-version)
//     is newer than ours is left alone, and the Report says so. Nothing is
//     downgraded.
//   - Compare, then write: a live CRD that already holds everything we would
//     apply is not written to.
//
// The v1alpha2 InferencePool CRD is only kept up to date where it is
// already installed, never created: a cluster that never served v1alpha2
// goes straight to the v1 pool.
//
// Status lists the CRDs odh-serving owns (the serving.kserve.io CRDs and
// the GIE ones), with their versions, managers and custom resource counts.
// Remove deletes them only when no custom resource of any of them is left,
// so removing odh-serving never deletes user data; otherwise it refuses and
// names what is left. Apply never deletes a CRD.
package crdlifecycle
