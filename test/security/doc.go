// Package security checks odh-serving's security posture against a real
// kube-apiserver and etcd:
//   - every workload rendered from every golden input passes the Pod
//     Security Admission library at level restricted, but for the explicit
//     allow-list in workloads_test.go;
//   - the RBAC the engine renders for a service's children and the RBAC of
//     charts/odh-serving has no wildcards, no escalate, bind or impersonate,
//     and cluster-scoped rights only where the allow-list in rbac_test.go
//     says why;
//   - the webhook server the controller runs speaks TLS 1.2 or newer only,
//     and every endpoint picker runs with secure serving;
//   - a token in a service's env (as a value or a secretKeyRef) never shows
//     in the controller's logs, in events or in the service's status.
//
// docs/security.md describes the posture and the allow-lists.
package security
