// Package podwatch is test tooling, never shipped: it follows the pods a
// label selector picks, for the tools that stand in for a kubelet's
// containers on this machine (test/modelserver's model servers,
// test/endpointpicker's endpoint picker processes).
package podwatch
