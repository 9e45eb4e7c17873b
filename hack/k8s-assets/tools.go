//go:build tools

// Package tools pins the Kubernetes control-plane binaries that the integration tests run.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
