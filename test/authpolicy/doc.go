// Package authpolicy is test tooling: it applies a Kuadrant AuthPolicy's
// rules to one request against a real API server, as Authorino would, so
// that tests can check the policies odh-serving renders with the cluster's
// own authenticator and authorizer instead of by reading the YAML.
//
// It reads the rules (spec.rules, or spec.defaults.rules or
// spec.overrides.rules) of a rendered AuthPolicy and, for a request (path,
// method, headers):
//
//   - authentication: an anonymous rule lets anyone in; a
//     kubernetesTokenReview rule takes the bearer token from the
//     Authorization header (its credentials' prefix, "Bearer" by default)
//     and sends a TokenReview for the rule's audiences. No identity: 401.
//   - authorization: each kubernetesSubjectAccessReview rule becomes a
//     SubjectAccessReview whose user, groups and resource attributes are the
//     rule's values, or its CEL expressions evaluated on the request and
//     the identity (request.path, request.method, request.headers,
//     auth.identity: the TokenReview's status, as Authorino exposes it),
//     with the string extensions Authorino's CEL has (split, ...). One
//     denied: 403. Otherwise 200. An opa rule whose Rego is exactly
//     "allow = false" (a default-deny policy's) denies every request: 403.
//   - no authentication rule at all: the request is anonymous, as
//     Authorino takes such a policy (the default-deny policies have none).
//   - response.unauthenticated and response.unauthorized: their literal
//     message is the denial's Message.
//
// What it does not know (metadata calls, other Rego, pattern matching,
// when conditions, success responses, callbacks, JWT, API keys) is an
// error, never a silent allow: a test of a policy that uses more must
// extend it.
//
// It is not Authorino: no caching, no priorities beyond the order of rule
// names, and only the rule kinds above. It is how the tests check that the
// attributes a policy describes are the ones the real authorizer decides
// on (docs/auth.md).
package authpolicy
