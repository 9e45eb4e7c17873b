// Package gateway is a test gateway: test tooling, never shipped, and no
// Gateway API implementation anyone should run. There is no Envoy on this
// machine and no Gateway API implementation that works without one, so the
// tests and the demo route requests through this instead.
//
// A Router serves the requests a Gateway's listener takes. It reads
// Gateways, HTTPRoutes, InferencePools (both groups), Services and Pods
// from a client.Reader, and follows the routes as Gateway API specifies:
// the routes attached to the listener (parent reference, section and port,
// allowed namespaces, hostnames), the rule by match precedence (exact path,
// longest prefix, method, headers, query), the URLRewrite,
// RequestHeaderModifier and ResponseHeaderModifier filters, the request and
// backendRequest timeouts (504), and the backends by weight, an invalid
// backend answering 500.
//
//   - A Service backend goes to one of the Service's Ready pods, at the
//     port's target, over HTTPS when the Service port's appProtocol is https
//     or the pod's port is named https.
//   - An InferencePool backend goes through the pool's endpoint picker over
//     ext_proc (envoy.service.ext_proc.v3), as Envoy does it: the request's
//     headers and body, the picker's endpoint in
//     x-gateway-destination-endpoint and its header and body mutations,
//     then the response's headers and body chunk by chunk, so the picker's
//     response plugins run. An immediate response of the picker (503 when
//     no endpoint is left, 429 when it sheds, 400 for a body without a
//     model) goes to the client. When the picker itself fails, the pool's
//     failureMode decides: FailOpen sends the request to a Ready pod of the
//     pool, FailClose answers 503. RejectAlpha2Pools makes v1alpha2 pools
//     invalid backends (InvalidKind), as a gateway serving v1 pools only;
//     a Gateway's PoolGroupsAnnotation names the pool groups it routes to
//     (the demo plays a gateway that serves v1alpha2 pools only, then is
//     upgraded).
//
// Listeners serve each Gateway at a loopback address of its own (from
// 127.0.100.1, skipping addresses another process has claimed or listens
// on), written to the Gateway's status with Programmed. The address is
// claimed among the processes of this machine (test/hostlock) while the
// Gateway is served, so that test packages run in parallel, and the demo
// beside them, never serve two Gateways at one address. NewStatus writes what the router
// observes: GatewayClasses Accepted, each HTTPRoute's parent status
// (Accepted, ResolvedRefs with the first invalid backend's reason), each
// InferencePool's parents (the Gateways that accepted a route sending to
// it, ResolvedRefs when the endpoint picker's Service exists). New puts
// the three together on a cluster (test/demo uses it).
//
// Auth (test tooling, no Kuadrant): with Options.Authorizer set to
// AuthPolicies, a request matched to a route first goes through the
// Kuadrant AuthPolicy in effect on its path (EffectivePolicy: a route's
// own policy over its Gateway's, a listener's over its Gateway's, the
// oldest among equals, overrides over defaults, atomic strategy only),
// whose rules test/authpolicy applies with the real API server's
// TokenReview and SubjectAccessReview. Refused: 401 or 403 with the
// reason in X-Ext-Auth-Reason, as Authorino answers through Envoy, and the
// policy named in X-Test-Gateway-Authpolicy. A policy it cannot apply
// answers 500: fail closed. No policy on the path, or no AuthPolicy CRD:
// the request goes on, as on a gateway Kuadrant does not protect. The
// metadata calls a policy makes (the MaaS routes' tier lookup) go to the
// URL it names with the Reviewer's HTTP client and Authorino's Secret
// (test/authpolicy); Authorino's caches are not modelled.
//
// Rate limits (test tooling, no Limitador): with Options.RateLimiter set
// to RateLimitPolicies, a request the AuthPolicy let through is counted
// against the Kuadrant RateLimitPolicy in effect on its path (the same
// EffectivePolicy), as Limitador counts: a fixed window per rate from the
// window's first request, the request refused with 429 (the policy named
// in X-Test-Gateway-Ratelimitpolicy) when a counter would go over, and
// counted on none then. The counters applied are a limit without counters
// (one for all) and source.remote_address (the client's address without
// its port); when predicates and other counters answer 500: fail closed.
// TokenRateLimitPolicies and the policies' status are not enforced:
// docs/auth.md, "The test gateway".
//
// The order is Envoy's: the Authorizer (ext_authz: Kuadrant's wasm
// filter calling Authorino) first, then the endpoint picker (ext_proc),
// both seeing the request as the client sent it, its path and headers
// (Authorization included); the route's URLRewrite and
// RequestHeaderModifier are applied when the request goes upstream, after
// the picker's header mutations, as Envoy's router filter applies a
// route's rewrite and request_headers_to_add/remove
// (RouteEntry::finalizeRequestHeaders, source/common/router/router.cc),
// and a header filter's removals come before its set and add (Envoy's
// HeaderParser: remove-before-add). docs/auth.md, "Credentials stop at
// the gateway", cites where this comes from.
//
// Each response says how it was routed: BackendHeader names the backend the
// weights chose, PickedByHeader who chose the pod of an InferencePool (its
// endpoint picker, or the gateway itself when the picker failed and the
// pool fails open).
//
// Model servers' and endpoint pickers' certificates are not verified, as
// KServe's DestinationRules do not verify them.
//
// engine/, internal/ and cmd/ never import this package.
package gateway
