// Package naming derives the names of a service's children. The rules are
// KServe's, so the children of a service keep their names when it moves to
// odh-serving:
//   - ChildName(parent, suffix) is parent+suffix when that fits in 63
//     characters, and otherwise a truncated parent, an MD5 of the parent and
//     the suffix, exactly 63 characters (knative's kmeta.ChildName);
//   - SafeChildName leaves 20 characters free for what Kubernetes appends to
//     workload names (ReplicaSet hashes, LeaderWorkerSet group and worker
//     indexes, pod suffixes), so names it derives stay valid all the way down.
package naming
