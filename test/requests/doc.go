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
// the rendered HTTPRoute.
package requests
