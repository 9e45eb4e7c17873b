// Package template evaluates the Go templates in a merged spec.
//
// Every string field of the spec may hold a text/template. Each is evaluated
// on its own, in place, on the decoded spec: a quote or a newline in a value
// cannot break anything, unlike evaluating the serialized document.
//
// The data is the merged service: .ObjectMeta, .Spec (after every preset
// and baseRef is merged, so parallelism that comes from a baseRef reaches
// the vLLM arguments) and .GlobalConfig. A missing map key is an error, and
// so is a nil pointer on the path (.Spec.Parallelism.Data when parallelism is
// unset); fieldOr reads such a path nil-safely with a default.
//
// The functions are sprig's HermeticTxtFuncMap (no env, expandenv, clock,
// random numbers or network) without key generation, password hashing and
// the remaining clock and random functions, plus ChildName, SafeChildName,
// fieldOr, deref and toYaml. Presets are other teams' input, so each
// execution is sandboxed (sandbox.go): until, untilStep, seq and repeat
// refuse large sizes, the output is capped at MaxOutput, function calls and
// loop iterations and the bytes functions handle are budgeted, define,
// block and template actions are refused, and values print without pointer
// addresses, so the same input always renders the same bytes.
package template
