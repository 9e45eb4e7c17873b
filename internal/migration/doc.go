// Package migration decides where a service's route stands in the move from
// the v1alpha2 InferencePool API (inference.networking.x-k8s.io) to the v1
// API (inference.networking.k8s.io), and, in static mode, moves the traffic
// of a Helm-made route by patching its backend weights.
//
// The phases, in order (engine/build renders each one):
//
//	phase    pools rendered     route weights (v1alpha2 / v1)   annotation                    EPP --pool-group
//	alpha2   v1alpha2           preset weight / -               -                             inference.networking.x-k8s.io
//	dual     v1alpha2 + v1      100 / 0                         -                             inference.networking.k8s.io
//	v1       v1alpha2 + v1      0 / 100                         inference-pool-migrated: v1   inference.networking.k8s.io
//	retired  v1                 - / preset weight               inference-pool-migrated: v1   inference.networking.k8s.io
//
// The endpoint picker watches the pool of one group (its --pool-group,
// which the engine sets whatever the preset says): the only pool there is
// in alpha2, and the v1 pool from dual on, so it does not restart as the
// route's weights move or when the v1alpha2 pool is retired.
//
// Decide is a pure function of what the controller read: the service (its
// recorded phase and the InferencePoolMigrated condition), the live route,
// both live pools and which InferencePool APIs the cluster serves.
//
//   - Only the v1alpha2 API served: alpha2. Only v1 served: retired at once,
//     since no v1alpha2 pool can exist to keep.
//   - Both served: dual, until the gateway shows it can route to the v1 pool:
//     it has Accepted the v1 pool, and the route's ResolvedRefs is True, or
//     False for a reason other than InvalidKind, on every gateway that
//     reports on the route (a gateway that never writes route status is not
//     waited for). A v1alpha2 backend rejected with InvalidKind moves to v1
//     at once; since the condition covers the whole route, InvalidKind on a
//     route with both backends counts only when the gateway accepted the v1
//     pool, the route has no v1 backend, or the message names only the
//     v1alpha2 group. Conditions older than their object's generation are
//     ignored. A fresh service starts at dual and moves on the first
//     evidence, so it never sits on v1alpha2 forever (kserve#5050).
//   - A service whose routes are the user's (spec.router.route.http.refs)
//     has no managed route, and the controller does not change the user's.
//     It stays dual while one of them does not exist, or one of their
//     backendRefs sends to the service's v1alpha2 pool: the message names
//     each such backendRef (HTTPRoute ns/name rules[i].backendRefs[j]), for
//     the user to change its group to inference.networking.k8s.io. Once
//     none does, the routes that send to the v1 pool need the same evidence
//     from their gateways as the managed route; routes that send to neither
//     pool hold nothing back. After the move, a backendRef put back on the
//     v1alpha2 pool keeps that pool past the grace period, until it is
//     changed again.
//   - v1 is one way. The recorded phase, or the migrated annotation on the
//     service or the route (both spellings: KServe's
//     serving.kserve.io/inference-pool-migrated and ODH's
//     serving.kserve.io/inferencepool-migrated), keeps a service at v1 or
//     later even when the v1 pool later turns NotReady.
//   - v1 becomes retired once the grace period has passed since the
//     lastTransitionTime of the service's InferencePoolMigrated condition;
//     until then Decision.RequeueAfter is the time left.
package migration
