// Package preset finds the presets (LLMInferenceServiceConfig objects) a
// service is built from, and in which order they apply.
//
// The order, first to last (the last one wins in the merge):
//  1. the well-known presets chosen by the service's shape: the scheduler
//     preset if router.scheduler is set without pool.ref; the route preset
//     if router.route is set without http.refs; then, with prefill, the
//     prefill preset and the decode preset, and otherwise the main preset,
//     each by worker and data- or pipeline-parallelism;
//  2. the service's baseRefs, in order;
//  3. the service's own spec.
//
// The shape is read from the spec merged with its baseRefs, so a baseRef can
// switch on a scheduler, a worker or prefill. Each preset is looked up in the
// service's namespace first and then in the system namespace, so a namespace
// can shadow a well-known preset by reusing its name.
package preset
