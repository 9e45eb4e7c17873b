// Package engine renders an LLMInferenceService into the Kubernetes objects
// that run it. It is a pure library: it reads no cluster and no environment,
// and the same input always gives the same bytes.
//
// Render runs the stages, each its own package:
//
//	preset:   find the presets the service is built from, in order
//	merge:    fold them and the service into one spec (strategic merge)
//	template: evaluate the Go templates in that spec
//	build:    turn the spec into child objects
//
// and manifest writes the result as a YAML or JSON stream. The render CLI,
// the Helm post-renderer and the controller all call Render, so what a user
// previews offline is what the cluster gets.
package engine
