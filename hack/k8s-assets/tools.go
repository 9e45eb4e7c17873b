//go:build tools

// Package tools pins the Kubernetes control-plane binaries that the integration tests and the
// demo run. go.mod requires the modules these binaries share with odh-serving at odh-serving's
// versions (newer than Kubernetes v1.34.4's own), so that the Go build cache compiles their
// packages once for both; hack/verify.sh fails when they drift apart.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
