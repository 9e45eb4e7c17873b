// Package merge folds preset layers and the service's own spec into one
// spec with a Kubernetes strategic merge patch, last layer winning.
//
// The patch metadata is that of the API types: containers, initContainers,
// env and volumes merge by name, ports by containerPort, volumeMounts by
// mountPath; maps merge key by key; every other list, args and command
// included, is replaced whole. In a list merged by key, the items a layer
// inherits keep their place, whatever order the layer lists them in, and
// the ones it adds follow.
//
// A layer sets only what it sets. A nil or empty value never erases what an
// earlier layer set: a service whose template has no containers keeps the
// preset's containers. This is KServe's rule, done here by dropping nulls
// from a layer before it becomes a patch.
//
// Merge also records, for every field of the result, which layer set it, so
// `render --explain` can show which preset won and a template error can name
// the preset its text came from.
package merge
