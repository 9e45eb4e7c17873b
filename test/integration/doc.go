// Package integration holds the tests that run against a real kube-apiserver
// and etcd (package controlplane): the CRDs, the conversion webhook and the
// validating webhook as a user meets them through the API.
package integration
