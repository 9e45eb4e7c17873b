package engine

import (
	"bytes"
	"slices"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
)

// Result is a rendered service: the children, and what the engine knows
// about them, so callers need not work it out again.
type Result struct {
	// Plan is what the children were built from: the merged spec and
	// shape, the child names, whether the service is stopped, and how the
	// spec was put together.
	Plan
	// Phase is the InferencePool migration phase the children were built
	// for.
	Phase convention.Phase
	// Objects are the children as typed objects, in apply order (see
	// Waves); by name within a kind. They can be server-side applied as
	// they are; Unstructured gives them as maps for writing out.
	Objects []build.Object
	// Children say what each object is: Children[i] is Objects[i]'s.
	Children []Child
	// Access says which MaaS tiers may call the service (Options.Tiers),
	// and what is wrong with the tiers annotation: the access objects
	// (RoleModelAccess) are built for the tiers it grants only, none when
	// it is malformed.
	Access build.Access
	// Autoscalers are the actuators the scaling specs ask for, one per
	// scaled workload, each with the workload it scales; one whose API is
	// not served is listed as withheld and is not among the Objects.
	Autoscalers []build.Autoscaler
	// PoolRef says which API groups the routes name the pool
	// spec.router.scheduler.pool.ref names in, and whether that is
	// assumed; nil without a pool reference.
	PoolRef *build.PoolRef
}

// Child says what one rendered object is for and when it is applied.
type Child struct {
	Role Role
	// Wave is when the child is applied: every child of a wave before any
	// of the next; within a wave, in any order or at once. Wave 0 holds
	// the ServiceAccounts, Secrets and Roles, wave 1 what refers to them
	// or that the workloads refer to (the bindings, certificates,
	// Services), wave 2 the workloads, wave 3 the pools, the route and the
	// autoscalers.
	Wave int
}

// Role is what a child is for.
type Role string

// The roles of a service's children.
const (
	// RoleMain is the main workload's Deployment; RoleWorker its
	// LeaderWorkerSet when it runs on several nodes.
	RoleMain   Role = "main"
	RoleWorker Role = "worker"
	// RolePrefill and RolePrefillWorker are the same for the prefill
	// workload.
	RolePrefill       Role = "prefill"
	RolePrefillWorker Role = "prefill-worker"
	// RoleWorkloadService is the Service in front of the main workload.
	RoleWorkloadService Role = "workload-service"
	// RoleScheduler is the endpoint picker's Deployment;
	// RoleSchedulerService its Service.
	RoleScheduler        Role = "scheduler"
	RoleSchedulerService Role = "scheduler-service"
	// RolePool is the v1 InferencePool, RolePoolV1alpha2 the v1alpha2 one
	// kept during the migration. Both have Names.Pool.
	RolePool         Role = "pool"
	RolePoolV1alpha2 Role = "pool-v1alpha2"
	// RoleRoute is the managed HTTPRoute.
	RoleRoute Role = "route"
	// RoleRBAC is a ServiceAccount, Role, RoleBinding or
	// ClusterRoleBinding.
	RoleRBAC Role = "rbac"
	// RoleCertificate is a cert-manager Certificate.
	RoleCertificate Role = "certificate"
	// RoleModelAccess is the model-user Role of a service published to
	// MaaS, or one of its tiers' RoleBindings.
	RoleModelAccess Role = "model-access"
	// RoleGatewayTLS is an Istio DestinationRule or a BackendTLSPolicy
	// that makes the gateway originate TLS to a backend.
	RoleGatewayTLS Role = "gateway-tls"
	// RoleMonitor is a PodMonitor or ServiceMonitor, or the metrics
	// reader's token Secret.
	RoleMonitor Role = "monitor"
	// RoleAuth is the AuthPolicy on a route of the service while auth is
	// on: the protected service's, or the anonymous one of a service
	// opened with convention.AnnotationEnableAuth "false".
	RoleAuth Role = "auth"
	// RoleMaaSRoute is the route of a service published to
	// Models-as-a-Service, on the MaaS gateway only; RoleMaaSAuth its
	// AuthPolicy, which the MaaS route is never served without.
	RoleMaaSRoute Role = "maas-route"
	RoleMaaSAuth  Role = "maas-auth"
	// RoleAutoscaler is the main workload's actuator (an HPA or a KEDA
	// ScaledObject); RolePrefillAutoscaler the prefill workload's.
	RoleAutoscaler        Role = "autoscaler"
	RolePrefillAutoscaler Role = "prefill-autoscaler"
	// RoleNetworkPolicy is a workload's NetworkPolicy: who may reach its
	// model servers.
	RoleNetworkPolicy Role = "network-policy"
)

// Named returns the name of the child built for role, or "" when none was.
func (r *Result) Named(role Role) string {
	for i, c := range r.Children {
		if c.Role == role {
			return r.Objects[i].GetName()
		}
	}
	return ""
}

// YAML returns the children as one YAML stream (Unstructured, written by
// manifest.WriteYAML), as `odh-serving render` writes them.
func (r *Result) YAML() ([]byte, error) {
	objs, err := r.Unstructured()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := manifest.WriteYAML(&out, objs); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Waves returns the indexes of Objects grouped by wave, in order.
func (r *Result) Waves() [][]int {
	var out [][]int
	for i, c := range r.Children {
		for len(out) <= c.Wave {
			out = append(out, nil)
		}
		out[c.Wave] = append(out[c.Wave], i)
	}
	return out
}

// Plan is a service merged with its presets, its templates evaluated and
// its children named: everything about it that does not depend on the
// migration phase. The controller reads the live route and pool by these
// names to decide the phase, then builds.
type Plan struct {
	// Spec is the spec merged from the well-known presets, the baseRefs
	// and the service, templates evaluated: what the children are built
	// from.
	Spec *v1alpha2.LLMInferenceServiceSpec
	// Shape is the service's spec merged with its baseRefs only: what
	// picks the well-known presets, and where the user's own route,
	// gateway and pool references are.
	Shape *v1alpha2.LLMInferenceServiceSpec
	// Names are the children's names.
	Names build.Names
	// Stopped is true when the service carries the stop annotation: it
	// has no children.
	Stopped bool
	// Explanation says how the spec was put together.
	Explanation Explanation
	// Warnings name the fields of the merged spec that are accepted but not
	// acted on (validation.Unimplemented); callers show them to the user.
	Warnings []string
	// SchedulerConfigFrom is the ConfigMap key whose text became the
	// endpoint picker's configuration (spec.router.scheduler.config.ref),
	// as namespace/name:key; empty when there was none.
	SchedulerConfigFrom string

	svc  *v1alpha2.LLMInferenceService
	opts Options
}

// roleOf is the role of a child built with the names n.
func roleOf(n build.Names, o build.Object) Role {
	gvk, name := o.GetObjectKind().GroupVersionKind(), o.GetName()
	switch gvk.Kind {
	case "Deployment":
		switch name {
		case n.Deployment:
			return RoleMain
		case n.PrefillDeployment:
			return RolePrefill
		case n.Scheduler:
			return RoleScheduler
		}
	case "LeaderWorkerSet":
		if name == n.PrefillLeaderWorkerSet {
			return RolePrefillWorker
		}
		return RoleWorker
	case "Service":
		if name == n.WorkloadService {
			return RoleWorkloadService
		}
		return RoleSchedulerService
	case "InferencePool":
		if gvk.Group == build.GroupPoolV1alpha2 {
			return RolePoolV1alpha2
		}
		return RolePool
	case "HTTPRoute":
		if name == n.MaaSRoute {
			return RoleMaaSRoute
		}
		return RoleRoute
	case "Certificate":
		return RoleCertificate
	case "DestinationRule", "BackendTLSPolicy":
		return RoleGatewayTLS
	case "AuthPolicy":
		if name == n.MaaSRouteAuth {
			return RoleMaaSAuth
		}
		return RoleAuth
	case "NetworkPolicy":
		return RoleNetworkPolicy
	case "PodMonitor", "ServiceMonitor", "Secret":
		return RoleMonitor
	case build.KindHPA, build.KindScaledObject:
		if name == n.PrefillHPA || name == n.PrefillScaledObject {
			return RolePrefillAutoscaler
		}
		return RoleAutoscaler
	case "ServiceAccount", "Role", "RoleBinding", "ClusterRoleBinding":
		if o.GetLabels()[convention.LabelComponent] == build.ComponentModelAccess {
			return RoleModelAccess
		}
		return RoleRBAC
	}
	return ""
}

// Without returns r without the children of the given roles: what a
// caller holds back (the controller withholds the route while auth cannot
// be enforced). r is not changed; the objects are shared.
func (r *Result) Without(roles ...Role) *Result {
	out := *r
	out.Objects, out.Children = nil, nil
	for i, c := range r.Children {
		if slices.Contains(roles, c.Role) {
			continue
		}
		out.Objects = append(out.Objects, r.Objects[i])
		out.Children = append(out.Children, c)
	}
	return &out
}
