// Package simdataplane is a SIMULATED data plane for what the cluster in
// the box cannot run yet: the gateway and the LeaderWorkerSet operator.
// Deployments, ReplicaSets and Pods are real there (test/kwokcluster:
// kube-controller-manager, kube-scheduler and kwok's nodes); this package
// plays the rest just far enough for odh-serving's controller to see its
// services become Ready and its routes move from the v1alpha2 to the v1
// InferencePool:
//
//   - LeaderWorkerSets that carry the workload selector (default
//     app.kubernetes.io/part-of=llminferenceservice, the label every child
//     of an LLMInferenceService has) are reported Available with all groups
//     ready. The LWS operator does not run (docs/demo.md says why): no
//     StatefulSet or Pod of theirs exists.
//   - Every GatewayClass is Accepted; every Gateway is Accepted and
//     Programmed with a made-up address (default 192.0.2.10, a documentation
//     address) and per-listener status with the routes attached to it.
//   - HTTPRoutes get a parent status from each Gateway they name: Accepted
//     when a listener admits the route's namespace, ResolvedRefs when every
//     backend (Service, v1 or v1alpha2 InferencePool) exists in the route's
//     namespace.
//   - InferencePools of both groups get a parent status (Accepted,
//     ResolvedRefs: the endpoint picker's Service exists) from each Gateway
//     whose accepted routes send to them. The v1alpha2 pool is accepted at
//     once, the v1 pool only V1PoolDelay after the simulator first saw it,
//     so the controller's migration from dual to v1 happens slowly enough to
//     watch.
//
// Every status carries the observedGeneration of the object it describes.
// Every change is logged with the prefix "[simulated data plane]".
//
// This is test tooling. engine/ and internal/ never import it.
package simdataplane
