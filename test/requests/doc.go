// Package requests sends real requests through GIE's endpoint picker (the
// epp binary hack/setup-test-assets.sh builds) for services rendered by
// the engine, one test per InferencePool migration phase. The endpoint
// picker runs as a local process with the rendered Deployment's arguments
// (only its listen ports and certificate folder differ, and its
// configuration goes through test/endpointpicker's adapter), as the
// rendered ServiceAccount (a TokenRequest token, so the rendered Role is all
// it may do), over TLS. The cluster is test/kwokcluster's: the rendered
// workload Deployment's pods are scheduled and run by kwok at loopback IPs,
// made not Ready by kwok's readiness stage (a label; no test writes a pod's
// status), test/modelserver answers at their IPs and test/gateway routes
// the rendered HTTPRoute. The package's tests and benchmarks share one
// control plane and cluster (testenv.MainWith), each phase in a namespace of
// its own with its own model servers (serving that namespace's pods only),
// endpoint picker (reading that namespace only, as its Role allows) and
// gateway router over the one Gateway the rendered routes name.
package requests
