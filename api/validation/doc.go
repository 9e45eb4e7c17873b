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
// Before any rule, decoding (DecodeService, DecodeConfig) checks the object
// against its CRD's OpenAPI schema (ValidateSchema), as the API server does
// before admission: every minimum, maximum, enum, pattern, length, item
// count, type and required field. The schema is not restated here: it is
// the generated CRDs' own (`make generate` copies them from the CRDs
// without their descriptions, as JSON for api.ServedSchemas and as Go
// values in zz_generated.schemas.go that the validators are built from,
// and `make verify` keeps both in step), so there is one source of truth: the Go types' markers, from
// which the CRDs the API server enforces are generated. The check lives here, not in the
// engine or the commands, because every path decodes through this package:
// render and post-render (engine/manifest, which may import only api/), the
// validating webhook and presets lint; a service that breaks a bound is
// refused offline with the same field path and words as in the cluster. It
// uses kube-openapi's validator, the one the API server wraps, without the
// API server's own packages, which the render binary does not link. CEL
// rules (x-kubernetes-validations) are not run offline; the rules they
// state are restated in Go below and tested against the CRD.
//
// Errors are field.ErrorList values, so every message names its field path.
package validation
