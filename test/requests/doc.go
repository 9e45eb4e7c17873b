// Package requests sends real requests through GIE's endpoint picker (the
// epp binary hack/setup-test-assets.sh builds) for services rendered by
// the engine, one test per InferencePool migration phase. The endpoint
// picker runs as a local process with the rendered Deployment's arguments
// (only its listen ports and certificate folder differ, and its
// configuration goes through test/endpointpicker's adapter), as the
// rendered ServiceAccount (a TokenRequest token, so the rendered Role is all
// it may do), over TLS. The cluster is a bare API server: the test writes
// the pods' status as a kubelet would, test/modelserver answers at their
// loopback IPs and test/gateway routes the rendered HTTPRoute.
package requests
