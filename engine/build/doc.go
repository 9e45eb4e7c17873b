// Package build turns a service and its merged, evaluated spec into the
// child objects, with their names and labels:
//   - the workloads: a Deployment for a single node or a LeaderWorkerSet for
//     several, for the main (decode) workload and for prefill; their
//     ServiceAccounts, Roles and RoleBindings; the workload Service;
//   - the scheduler (endpoint picker): Deployment, Service, ServiceAccount,
//     Role, RoleBinding and the auth-delegator ClusterRoleBinding;
//   - the InferencePools: v1, and v1alpha2 while a migration needs it;
//   - the HTTPRoute, whose pool backends follow the migration phase;
//   - for a service published to Models-as-a-Service, the model-user Role
//     and its tiers' RoleBindings (ModelAccess);
//   - what makes the gateway originate TLS to the backends: Istio
//     DestinationRules or Gateway API BackendTLSPolicies (Options.GatewayTLS);
//   - the Prometheus Operator monitors of the model servers and the endpoint
//     picker, and the metrics reader whose token the latter sends
//     (Options.Monitoring).
//
// It adds nothing that varies between runs: no timestamps, no random values,
// no secret data (the metrics reader's token Secret is filled by the
// cluster). Certificates come from the controller or the platform.
package build
