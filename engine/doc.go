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
// and manifest writes the result as a YAML or JSON stream. Render is
// Prepare (preset, merge, template, and the children's names) then
// Plan.Build for a migration phase; the controller calls the two apart, as
// it reads the live route and pool by name to decide the phase. The Result
// says what was built: the merged spec and shape, the names, whether the
// service is stopped, and each child's role and apply wave. The render CLI
// and the Helm post-renderer call Render, the controller Prepare and Build:
// the same code, so what a user previews offline is what the cluster gets.
//
// Models-as-a-Service access is built here too, as children like the
// others, so there is one source of truth for it: when Options.Tiers holds
// the tier list (engine/tier), a service carrying the annotation
// alpha.maas.opendatahub.io/tiers gets the Role <service>-model-user (verb
// post on itself) and a RoleBinding per allowed tier to the ServiceAccount
// group of the tier's namespace (build.ModelAccess). They are applied,
// owned and pruned like every child. A bad annotation does not fail the
// render, and fails closed (tier.Config.Grant): a malformed one binds no
// tier, an unknown tier name gets no binding; Result.Access.Err says why.
// What was bound before and is no longer granted is pruned.
package engine
