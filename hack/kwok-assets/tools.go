//go:build tools

// Package tools pins kwok, which plays the kubelets of the simulated GPU nodes in the tests and
// the demo. It is a module of its own because kwok v0.8.0 needs Go 1.26 and k8s.io v0.36, which
// odh-serving (k8s.io v0.34) and hack/k8s-assets (Kubernetes v1.34) do not use.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
