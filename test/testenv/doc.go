// Package testenv is what the tests against a control plane (test/...)
// share, so that each thing is done one way:
//
//   - Main is a test package's TestMain: it starts a control plane
//     (test/controlplane) for the package and stops it at the end. It also
//     registers -update (internal/golden) for every package that uses it.
//   - NewNamespace and EnsureNamespace make the namespaces tests work in.
//   - Eventually and Within poll a check until it passes, and stop with the
//     test's context.
//   - Recorder is an http.RoundTripper wrapper that records the writes a
//     client sends, counts its requests by method, and can answer chosen
//     writes with a conflict.
//   - Kubeconfig writes a kubeconfig for a rest.Config, for commands that
//     take --kubeconfig.
//   - Helm runs helm (or helm4) with HELM_* folders of its own.
package testenv
