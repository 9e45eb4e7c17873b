// Package simdataplane is a SIMULATED LeaderWorkerSet operator, for what
// the cluster in the box cannot run yet. Deployments, ReplicaSets and Pods
// are real there (test/kwokcluster: kube-controller-manager, kube-scheduler
// and kwok's nodes), and the gateway is test/gateway, which routes real
// requests and writes the status it observes. This package only reports
// LeaderWorkerSets that carry the workload selector (default
// app.kubernetes.io/part-of=llminferenceservice, the label every child of
// an LLMInferenceService has) Available with all groups ready. The LWS
// operator does not run (docs/demo.md says why): no StatefulSet or Pod of
// theirs exists.
//
// Every status carries the observedGeneration of the object it describes.
// Every change is logged with the prefix "[simulated data plane]".
//
// This is test tooling. engine/ and internal/ never import it.
package simdataplane
