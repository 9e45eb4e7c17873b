// Package manifest reads and writes streams of Kubernetes objects.
//
// Reading splits a multi-document YAML (or JSON) stream, remembers the file
// and line each document starts at, and decodes LLMInferenceService and
// LLMInferenceServiceConfig documents strictly in either served version, so
// that an error reads "svc.yaml:12: LLMInferenceService team/llama:
// spec.template.containers[0].imagee: Forbidden: unknown field".
//
// Writing is deterministic: map keys are sorted, objects keep the order they
// are given in, and nothing depends on time or chance.
package manifest
