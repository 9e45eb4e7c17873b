// Package manifest reads and writes streams of Kubernetes objects.
//
// Reading splits a multi-document YAML (or JSON) stream where a YAML parser
// would: at "---" lines (a comment or content may follow the marker), at
// "..." lines, with LF, CRLF or CR line ends and an optional byte order
// mark; a v1 List stands for its items. It remembers the file and line each
// document starts at, and decodes LLMInferenceService and
// LLMInferenceServiceConfig documents strictly in either served version, so
// that an error reads "svc.yaml:12: LLMInferenceService team/llama:
// spec.template.containers[0].imagee: Forbidden: unknown field".
//
// Writing is deterministic: map keys are sorted, objects keep the order they
// are given in, and nothing depends on time or chance.
package manifest
