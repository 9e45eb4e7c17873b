// Package fieldpath walks a typed spec and names each value by the path a
// user reads in YAML: spec.template.containers[name=main].args. Lists that
// strategic merge joins by key (containers, env, ports, volumes) are named by
// that key, because the key, not the index, is what stays stable across
// presets; other lists are single values, as strategic merge treats them.
//
// The merge stage uses it to record which preset set each field, and the
// template stage to evaluate each string in place and to name the field a
// failing template sits in.
package fieldpath
