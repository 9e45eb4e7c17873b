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
//   - metadata: an http rule (the MaaS routes' tier lookup) is called after
//     authentication with Authorizer.HTTP: GET, or POST with the JSON of
//     its body expression (CEL, over request and auth.identity), and its
//     sharedSecretRef (a Secret key in Authorizer.SecretNamespace,
//     Authorino's namespace) as the Authorization header's credentials.
//     As Authorino (pkg/evaluators/metadata/generic_http.go,
//     pkg/service/auth_pipeline.go): the answer becomes
//     auth.metadata.<name>, parsed as JSON when its Content-Type says so,
//     whatever its status code, else text; a call that fails leaves the
//     name out and the policy goes on. The cache is accepted and not
//     applied: each request calls.
//   - patternMatching: each pattern is a CEL predicate over request and
//     auth (identity, metadata); false, or an evaluation that fails (a key
//     missing, a metadata call that failed), denies: 403.
//   - response.unauthenticated and response.unauthorized: their literal
//     message is the denial's Message.
//   - response.success.filters: on a request let through, each filter's
//     json properties (CEL expressions) are Decision.Filters, what Kuadrant
//     passes on to the rate limits as auth.<filter>.<property>.
//
// What it does not know (other metadata kinds, urlExpression, headers,
// pattern selectors and operators, other Rego, when conditions, success
// headers, callbacks, JWT, API keys) is an error, never a silent allow: a
// test of a policy that uses more must extend it. An error of the setup
// (a shared secret that is not there) is an error too: the test gateway
// answers 500.
//
// It is not Authorino: no caching, no priorities beyond the order of rule
// names (Authorino evaluates the authorization rules concurrently; a
// denial's reason may name another rule there), and only the rule kinds
// above. It is how the tests check that the
// attributes a policy describes are the ones the real authorizer decides
// on (docs/auth.md).
package authpolicy
