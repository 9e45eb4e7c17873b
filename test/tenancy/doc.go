// Package tenancy holds the attacks one tenant makes on another in a shared
// cluster, sent through the test gateway against the rendered policies.
// Test tooling stands in for what cannot run here: test/gateway for Envoy
// (the Gateway API routing, the ext_authz call and the route's filters, in
// Envoy's order), test/authpolicy for Authorino (the AuthPolicies'
// TokenReview and SubjectAccessReview on the real API server), and
// test/modelserver for the model servers (which record the requests they
// received).
//
// Each attack is a test that sends the request a tenant would send and
// checks that it is refused; each was run against the code it fixes first,
// where it succeeded (docs/security.md, "Tenant isolation", says how).
//
// The harness (harness_test.go) gives every test the same cluster: a
// control plane with GIE's, Gateway API's and Kuadrant's CRDs, a kwok
// cluster whose pods the model-server simulator answers, the ingress
// Gateway with the chart's AuthPolicies as `helm template` renders them
// with auth.enabled=true, the test gateway enforcing every AuthPolicy in
// the cluster, the tenants' namespaces team-a and team-b, services
// rendered by the engine with --enable-auth and applied as the controller
// would, RBAC grants and ServiceAccount tokens from the TokenRequest API.
// The tenants' namespaces have fixed names, so the package's tests do not
// run in parallel.
//
// engine/, internal/ and cmd/ never import this package.
package tenancy
