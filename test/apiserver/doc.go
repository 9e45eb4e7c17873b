// Package apiserver tests `odh-serving api-server` (issue #15) as the
// cluster runs it: a real kube-apiserver configured as a front proxy
// (--requestheader-* flags, a proxy client certificate, aggregator
// routing), the APIService registered with the server's CA, and the
// server as its own process, built once, with exactly the RBAC that
// internal/apiserver's doc lists. Users are client certificates of the
// API server's CA with chosen groups; every request goes through the
// kube-apiserver, as kubectl's would, except where a test talks to the
// server's port directly to forge headers.
//
// One control plane and one server serve every test of the package; the
// tests that change the tier ConfigMap put it back before they end.
package apiserver
