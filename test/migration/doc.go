// Package migrationtest tests the InferencePool migration and the CRD
// lifecycle against a real kube-apiserver and etcd: the static-mode weight
// patch, the CRD apply with its bundle-version gate, `crds status` and
// `crds remove`.
package migrationtest
