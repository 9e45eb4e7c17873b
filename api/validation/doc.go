// Package validation holds the rules an LLMInferenceService and an
// LLMInferenceServiceConfig must follow. The validating webhook and the
// engine share them, so a spec the webhook admits is one the engine accepts
// for the same reasons, and the engine reports a merged spec that breaks a
// rule with the same message.
//
// Rules come in two kinds:
//   - rules about one object alone (a value out of range, two fields that
//     exclude each other in the same object) apply to services and presets;
//   - rules that a preset could still satisfy (a worker needs data or
//     pipeline parallelism, data needs dataLocal) apply to a service only
//     when it has no baseRefs, and always to the merged spec.
//
// Errors are field.ErrorList values, so every message names its field path.
package validation
