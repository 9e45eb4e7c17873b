// Package testenv is what the tests against a control plane (test/...)
// share, so that each thing is done one way:
//
//   - Main is a test package's TestMain: it starts a control plane
//     (test/controlplane) for the package and stops it at the end. It also
//     registers -update (internal/golden) for every package that uses it.
//     MainWith is Main with the control plane's options, such as the few
//     CRD sets a package's tests use, and a Cluster: test/kwokcluster's
//     workload half on that control plane, which the first test that
//     needs it starts and the package's tests share.
//     StartControlPlane and StartCluster start them for a single test.
//   - NewNamespace and EnsureNamespace make the namespaces tests work in.
//   - Eventually and Within poll a check until it passes, and stop with the
//     test's context.
//   - Recorder is an http.RoundTripper wrapper that records the writes a
//     client sends, counts its requests by verb, and can answer chosen
//     writes with a conflict.
//   - Start runs a controller, a server or a simulator until the test ends;
//     FreePort claims it a port (test/hostlock), Buffer holds its logs,
//     InitLogger sets controller-runtime's logger (TEST_LOG=1 shows it).
//   - Kubeconfig writes a kubeconfig for a rest.Config, for commands that
//     take --kubeconfig; NewClient is a client of a rest.Config that knows
//     the kinds it is given.
//   - Helm runs helm (or helm4) with HELM_* folders of its own;
//     BuildCommand builds the binaries it runs.
package testenv
