// Package presets holds the well-known LLMInferenceServiceConfig presets that
// odh-serving ships, one folder each (<name>/preset.yaml), embedded in the
// binary. The files name the presets without a prefix; Load adds the
// configured one (KServe's "kserve-" by default), so that existing baseRefs
// such as kserve-config-llm-template keep working.
package presets
