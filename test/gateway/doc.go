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
//     invalid backends (InvalidKind), as a gateway serving v1 pools only.
//
// Model servers' and endpoint pickers' certificates are not verified, as
// KServe's DestinationRules do not verify them.
//
// engine/, internal/ and cmd/ never import this package.
package gateway
