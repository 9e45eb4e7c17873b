// Package endpointpicker is test tooling: it lets GIE's endpoint picker (EPP,
// sigs.k8s.io/gateway-api-inference-extension/cmd/epp, built from the Go
// module proxy by hack/setup-test-assets.sh) run the configuration our
// presets render for llm-d-router's endpoint picker, which is what the
// presets name but which cannot be built here.
//
// Adapt is the only change made to what the controller renders. It changes
// two things and nothing else:
//
//   - the configuration's apiVersion becomes GIE's (GIEAPIVersion): GIE
//     v1.3.1 to v1.5.0 accept only their own group, while the presets write
//     llm-d-router's llm-d.ai/v1alpha1;
//   - the plugins only llm-d-router registers (no-hit-lru-scorer,
//     active-request-scorer, the disagg-* and P/D filter plugins,
//     precise-prefix-cache-scorer) leave the plugin list and every
//     scheduling profile.
//
// When what is left is not the profile the service asked for (its profile
// handler, a filter or its heaviest scorer is gone, as in the prefill-decode
// and precise-prefix-cache profiles), Adapt says so and no EPP should be
// started for the service: the InferencePool's failureMode then decides what
// the gateway does. Flags, pool name, namespace and group, TLS and RBAC are
// never touched.
//
// The package's tests also check statically that every plugin type and
// parameter name the presets render is one llm-d-router registers, against a
// list taken from llm-d-router's source at a pinned commit
// (testdata/llm-d-router-plugins.yaml).
//
// Nothing in engine/, internal/ or cmd/ imports this package.
package endpointpicker
