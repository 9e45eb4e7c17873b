//go:build tools

// Package tools pins kwok, which plays the kubelets of the simulated GPU nodes in the tests and
// the demo. go.mod requires every module kwok shares with odh-serving at odh-serving's version,
// and the kubelet's API modules (k8s.io/kubelet, cri-api, cri-client) at hack/k8s-assets'
// version, so that the Go build cache compiles their packages once for all of them;
// hack/verify.sh fails when they drift apart. Where kwok asks for more than odh-serving has, a
// replace holds the module at odh-serving's version (github.com/go-errors/errors).
//
// kwok v0.7.0, not v0.8.0: v0.8.0 needs k8s.io v0.36 and newer grpc and OpenTelemetry than
// odh-serving's, so it shared almost none of its 741 packages. v0.7.0 was written against
// k8s.io v0.33; against v0.34 one file fails to compile (pkg/utils/informer/informer.go reads
// metav1.InitialEventsListBlueprintAnnotationKey, which k8s.io/apimachinery v0.34 dropped), and
// hack/setup-test-assets.sh builds it from a copy of the module with kwok's own change for v0.34
// (upstream commit 3e07a77, "Bump k8s to 1.34": those four lines go). Its default stages are
// v0.7.0's (test/kwokcluster/stages).
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
