// Package kuadrant is test tooling, never shipped: it stands in for
// Kuadrant's policy controller (kuadrant-operator), which cannot run here
// (no Envoy, no Authorino, no operator). Sync writes what that controller
// writes, and nothing it would not:
//
//   - on each AuthPolicy, status.observedGeneration and the condition
//     Accepted: True (reason Accepted) when its target (a Gateway, a
//     listener of one, an HTTPRoute or a rule of one) exists, else False
//     (TargetNotFound);
//   - then, only on an accepted policy, Enforced: True (reason Enforced)
//     when it is the policy in effect (test/gateway's EffectivePolicy) on
//     at least one path Gateway → listener → HTTPRoute → rule whose
//     Gateway and listener are Programmed and whose route its Gateway
//     accepted; False with reason Overridden when it is on such paths but
//     replaced on all of them; False with reason Unknown when it is on
//     none ("not in the path to any existing routes"), or when the test
//     gateway could not enforce it: test/authpolicy cannot apply its
//     rules, or test/gateway does not model its strategy or conditions.
//     Strict as the real one: it never reports Enforced a policy the test
//     gateway would not enforce.
//   - on each HTTPRoute, for each Gateway that accepted it, a parent
//     status of controllerName kuadrant.io/policy-controller whose
//     condition kuadrant.io/AuthPolicyAffected is True (reason Accepted)
//     while an accepted AuthPolicy is on the route's path; the condition
//     is removed when none is, as Kuadrant removes it.
//
// The reasons and messages follow kuadrant-operator's
// internal/kuadrant (conditions.go, errors.go) and its
// HTTPRoutePolicyDiscoverabilityReconciler. What it does not model: other
// policy kinds, Authorino's and the gateways' own readiness (the
// components Kuadrant waits for before Enforced), CEL validation.
//
// engine/, internal/ and cmd/ never import this package.
package kuadrant
