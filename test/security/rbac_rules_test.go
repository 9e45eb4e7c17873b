package security

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// chartRule is one rule a Role or ClusterRole of charts/odh-serving may
// hold: whose, on what, with which verbs, limited to which names, and why.
// Every verb on every resource of every rule the chart renders must be
// allowed by an entry (checkChartRules).
type chartRule struct {
	// role is the Role's or ClusterRole's name.
	role string
	// resources are group/resource (a subresource as resource/sub), or
	// non-resource URLs, which start with "/".
	resources []string
	verbs     []string
	// names, when set, are the resourceNames the rule must be limited to:
	// a rule without resourceNames, or naming another, is not allowed.
	names []string
	why   string
}

// Reasons several rules share.
const (
	whyChildren = "the children the controller makes for each service (create to delete; with watchNamespaces in a Role " +
		"per watched namespace, else in the ClusterRole because services may be in any namespace)"
	whyStaticChildren = "static mode: Helm makes the children; the controller reads them for the services' status"
	whyGrantedOn      = "held only so that the controller may grant it in the children's Roles (the endpoint picker's, the " +
		"routing sidecar's): the RBAC API lets a subject grant only what it holds, and escalate would let it grant anything"
	whyServices  = "the services it reconciles: read, watch, and patch (to take off an earlier version's finalizer)"
	whyEvents    = "events on the services, and on the leader election"
	whyAuthDeleg = "TokenReview and SubjectAccessReview: the controller's /metrics (HTTPS) authenticates each caller's " +
		"bearer token and authorizes get on /metrics (controller-runtime's filters.WithAuthenticationAndAuthorization); " +
		"and holding what system:auth-delegator grants lets the controller bind each endpoint picker to it without the bind verb"
)

// chartRules is the allow-list of every rule in the chart's RBAC.
var chartRules = []chartRule{
	// The controller: its services and presets.
	{"odh-serving-controller", []string{"serving.kserve.io/llminferenceservices"}, []string{"get", "list", "watch", "update", "patch"}, nil, whyServices},
	{"odh-serving-controller", []string{"serving.kserve.io/llminferenceservices/status"}, []string{"get", "update", "patch"}, nil, "the services' status"},
	{"odh-serving-controller", []string{"serving.kserve.io/llminferenceservices/finalizers"}, []string{"update"}, nil,
		"take off the finalizer earlier versions put on services (the controller adds none now)"},
	{"odh-serving-controller", []string{"serving.kserve.io/llminferenceserviceconfigs"}, []string{"get", "list", "watch"}, nil, "the presets, read-only"},
	{"odh-serving-controller", []string{"serving.kserve.io/llminferenceservices"}, []string{"post"}, nil,
		"maas.enabled: held only so that the controller may create each published service's Role <service>-model-user, " +
			"which grants post on it; no API request uses the verb"},
	// ConfigMaps: read by name where services name them, and the CA bundle.
	{"odh-serving-controller", []string{"/configmaps"}, []string{"get"}, nil,
		"spec.router.scheduler.config.ref names a ConfigMap of the service's namespace (or a shared config-scheduler-* " +
			"one of the system namespace) for the endpoint picker; its name is the user's choice, so get cannot be " +
			"limited by name; read one by one, never listed, watched or cached"},
	{"odh-serving-controller", []string{"/configmaps"}, []string{"create"}, nil,
		"self-signed mode: the CA bundle ConfigMap odh-serving-ca-bundle that BackendTLSPolicies name, in each service's " +
			"namespace; the RBAC API cannot limit create by name"},
	{"odh-serving-controller", []string{"/configmaps"}, []string{"get", "patch"}, []string{"odh-serving-ca-bundle"},
		"self-signed mode: read and update the CA bundle ConfigMap, and no other ConfigMap"},
	// Children.
	{"odh-serving-controller", []string{"apps/deployments", "leaderworkerset.x-k8s.io/leaderworkersets", "/services", "/serviceaccounts",
		"rbac.authorization.k8s.io/roles", "rbac.authorization.k8s.io/rolebindings", "inference.networking.k8s.io/inferencepools",
		"inference.networking.x-k8s.io/inferencepools", "gateway.networking.k8s.io/httproutes", "autoscaling/horizontalpodautoscalers",
		"keda.sh/scaledobjects", "cert-manager.io/certificates", "networking.istio.io/destinationrules",
		"gateway.networking.k8s.io/backendtlspolicies", "monitoring.coreos.com/podmonitors", "monitoring.coreos.com/servicemonitors",
		"networking.k8s.io/networkpolicies"},
		[]string{"get", "list", "watch", "create", "update", "patch", "delete"}, nil, whyChildren},
	{"odh-serving-controller", []string{"kuadrant.io/authpolicies"}, []string{"get", "list", "watch", "create", "update", "patch", "delete"}, nil,
		"auth on: the AuthPolicy on each route of each service, which names the service (anonymous for one annotated " +
			"security.opendatahub.io/enable-auth: \"false\"; docs/auth.md); names are per service"},
	{"odh-serving-controller", []string{"/secrets"}, []string{"get", "list", "watch", "create", "update", "patch", "delete"}, nil,
		"self-signed mode: each service's serving certificate, the webhook's, the CA and the CA bundle Secret for Istio " +
			"gateways; with monitoring: the metrics readers' token Secrets. Names are per service, so not limited by name; " +
			"the cache keeps only Secrets labelled ours. Neither (static mode with cert-manager or the service CA operator, or " +
			"monitoring off): no Secret rights, and the controller neither watches nor reads Secrets"},
	{"odh-serving-controller", []string{"apps/deployments", "leaderworkerset.x-k8s.io/leaderworkersets", "/services", "/serviceaccounts",
		"rbac.authorization.k8s.io/roles", "rbac.authorization.k8s.io/rolebindings", "inference.networking.k8s.io/inferencepools",
		"inference.networking.x-k8s.io/inferencepools", "autoscaling/horizontalpodautoscalers", "keda.sh/scaledobjects",
		"cert-manager.io/certificates", "rbac.authorization.k8s.io/clusterrolebindings", "networking.k8s.io/networkpolicies"},
		[]string{"get", "list", "watch"}, nil, whyStaticChildren},
	{"odh-serving-controller", []string{"gateway.networking.k8s.io/httproutes"}, []string{"get", "list", "watch", "update", "patch"}, nil,
		"static mode: the controller shifts the routes' weights during the InferencePool migration"},
	{"odh-serving-controller", []string{"/pods"}, []string{"get", "list", "watch"}, nil,
		"both modes: the controller watches its workloads' pods, which say why a workload is not Ready (unschedulable, " +
			"image pull, crash loop, readiness probe); in managed mode it also grants them in the children's Roles"},
	{"odh-serving-controller", []string{"discovery.k8s.io/endpointslices", "inference.networking.x-k8s.io/inferenceobjectives",
		"inference.networking.x-k8s.io/inferencemodelrewrites", "llm-d.ai/inferenceobjectives", "llm-d.ai/inferencemodelrewrites"},
		[]string{"get", "list", "watch"}, nil, whyGrantedOn},
	{"odh-serving-controller", []string{"/events", "events.k8s.io/events"}, []string{"create", "patch"}, nil, whyEvents},
	// The controller, cluster-scoped.
	{"odh-serving-controller", []string{"gateway.networking.k8s.io/gateways"}, []string{"get", "list", "watch"}, nil,
		"a service's gateway.refs may name a Gateway in any namespace; its listeners and addresses give the URLs, its class the TLS"},
	{"odh-serving-controller", []string{"gateway.networking.k8s.io/gatewayclasses"}, []string{"get", "list", "watch"}, nil,
		"which implementation runs a route's gateway decides what tells it to originate TLS"},
	{"odh-serving-controller", []string{"apiextensions.k8s.io/customresourcedefinitions"}, []string{"get", "list", "watch"}, nil,
		"which CRDs are served: optional kinds are used once their CRDs are established"},
	{"odh-serving-controller", []string{"apiextensions.k8s.io/customresourcedefinitions"}, []string{"create"}, nil,
		"--manage-crds: apply GIE's CRDs; create cannot be limited by name"},
	{"odh-serving-controller", []string{"apiextensions.k8s.io/customresourcedefinitions"}, []string{"update", "patch"},
		[]string{"inferencepools.inference.networking.k8s.io", "inferencepools.inference.networking.x-k8s.io", "inferenceobjectives.inference.networking.x-k8s.io",
			"inferencemodelrewrites.inference.networking.x-k8s.io", "inferencepoolimports.inference.networking.x-k8s.io"},
		"--manage-crds: update GIE's CRDs, no other"},
	{"odh-serving-controller", []string{"apiextensions.k8s.io/customresourcedefinitions"}, []string{"update", "patch"},
		[]string{"llminferenceservices.serving.kserve.io", "llminferenceserviceconfigs.serving.kserve.io"},
		"self-signed mode: write the webhook CA into our CRDs' conversion stanza"},
	{"odh-serving-controller", []string{"admissionregistration.k8s.io/validatingwebhookconfigurations"}, []string{"get", "list", "watch"}, nil,
		"self-signed mode: watch the webhook configuration it injects its CA into"},
	{"odh-serving-controller", []string{"admissionregistration.k8s.io/validatingwebhookconfigurations"}, []string{"update", "patch"},
		[]string{"odh-serving-validation"}, "self-signed mode: inject the CA into our own webhook configuration only"},
	{"odh-serving-controller", []string{"admissionregistration.k8s.io/mutatingwebhookconfigurations"}, []string{"get", "update", "patch"},
		[]string{"odh-serving-replicas"}, "self-signed static mode: inject the CA into the replicas webhook's configuration only, read by name"},
	{"odh-serving-controller", []string{"rbac.authorization.k8s.io/clusterrolebindings"}, []string{"get", "list", "watch", "create", "update", "patch", "delete"}, nil,
		"each endpoint picker's binding to system:auth-delegator and each metrics reader's to kserve-metrics-reader-cluster-role; " +
			"names are per service, so not limited by name"},
	{"odh-serving-controller", []string{"authentication.k8s.io/tokenreviews", "authorization.k8s.io/subjectaccessreviews"}, []string{"create"}, nil, whyAuthDeleg},
	{"odh-serving-controller", []string{"/metrics"}, []string{"get"}, nil,
		"monitoring: what kserve-metrics-reader-cluster-role grants, held so that the controller may bind each service's metrics reader to it"},
	{"odh-serving-controller", []string{"apiregistration.k8s.io/apiservices"}, []string{"get", "update", "patch"}, []string{"v1alpha1.modelserving.opendatahub.io"},
		"maas.enabled, self-signed mode: inject the CA into the MaaS API server's APIService only"},
	// Leader election, in the system namespace.
	{"odh-serving-leader-election", []string{"coordination.k8s.io/leases"}, []string{"get", "list", "watch", "create", "update", "patch", "delete"}, nil,
		"leader election (the Lease odh-serving-controller.opendatahub.io); a Role in the system namespace only"},
	{"odh-serving-leader-election", []string{"/events", "events.k8s.io/events"}, []string{"create", "patch"}, nil, whyEvents},
	{"odh-serving-leader-election", []string{"/configmaps"}, []string{"get", "list", "watch"}, []string{"tier-to-group-mapping"},
		"maas.enabled: the tier list, watched by name with a field selector"},
	// Who may read metrics.
	{"odh-serving-metrics-reader", []string{"/metrics"}, []string{"get"}, nil,
		"who may scrape the controller's /metrics: the administrator binds Prometheus's ServiceAccount to it"},
	{"kserve-metrics-reader-cluster-role", []string{"/metrics"}, []string{"get"}, nil,
		"the services' metrics readers may get the endpoint pickers' /metrics (ODH's KServe's name)"},
	// The MaaS API server and its users.
	{"odh-serving-api-server", []string{"serving.kserve.io/llminferenceservices"}, []string{"get", "list", "watch"}, nil,
		"models are the services of every namespace, read through an informer"},
	{"odh-serving-api-server", []string{"/configmaps"}, []string{"get", "list", "watch"}, []string{"tier-to-group-mapping"},
		"the tier list, watched by name"},
	{"odh-serving-api-server", []string{"/serviceaccounts"}, []string{"get", "create", "delete"}, nil,
		"a Role in each tier namespace: one ServiceAccount per user, deleted and made again to revoke"},
	{"odh-serving-api-server", []string{"/serviceaccounts/token"}, []string{"create"}, nil,
		"a Role in each tier namespace: mint the users' tokens"},
	{"odh-serving-maas-tier-reviewer", []string{"modelserving.opendatahub.io/tierreviews"}, []string{"create"}, nil,
		"the gateway's policy engine asks which tier a caller has"},
	{"odh-serving-maas-user", []string{"modelserving.opendatahub.io/models"}, []string{"get", "list", "watch"}, nil,
		"users list their tier's models; the API server decides what each sees"},
	{"odh-serving-maas-user", []string{"modelserving.opendatahub.io/tokenrequests", "modelserving.opendatahub.io/tokenrevocations"}, []string{"create"}, nil,
		"users mint and revoke their own tokens"},
}

// ruleGrants are what one rule grants: "verb resource", where resource is
// group/resource or a non-resource URL.
func ruleGrants(r rbacv1.PolicyRule) []string {
	var out []string
	for _, v := range r.Verbs {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out = append(out, v+" "+g+"/"+res)
			}
		}
		for _, u := range r.NonResourceURLs {
			out = append(out, v+" "+u)
		}
	}
	return out
}

// checkChartRules lists what a Role or ClusterRole named role grants that
// chartRules does not allow, and marks the entries it uses in used. Of the
// entries that allow a verb, the one that allows most of the rule's verbs
// (then the one with the fewest verbs) is the rule's.
func checkChartRules(role string, rules []rbacv1.PolicyRule, used map[int]bool) []string {
	var problems []string
	for i, r := range rules {
		for _, g := range ruleGrants(r) {
			verb, resource, _ := strings.Cut(g, " ")
			match, covered := -1, 0
			for j, a := range chartRules {
				if a.role != role || !slices.Contains(a.resources, resource) || !slices.Contains(a.verbs, verb) || !namesAllowed(a.names, r.ResourceNames) {
					continue
				}
				n := 0
				for _, v := range r.Verbs {
					if slices.Contains(a.verbs, v) {
						n++
					}
				}
				if match < 0 || n > covered || n == covered && len(a.verbs) < len(chartRules[match].verbs) {
					match, covered = j, n
				}
			}
			if match < 0 {
				names := "any name"
				if len(r.ResourceNames) > 0 {
					names = fmt.Sprintf("resourceNames %v", r.ResourceNames)
				}
				problems = append(problems, fmt.Sprintf("rule %d grants %s on %s (%s), which no entry of chartRules allows%s",
					i, verb, resource, names, allowedNames(role, resource, verb)))
				continue
			}
			used[match] = true
		}
	}
	return problems
}

// namesAllowed reports whether a rule limited to names (none: any name)
// is within allowed (nil: any name).
func namesAllowed(allowed, names []string) bool {
	if allowed == nil {
		return true
	}
	return len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(allowed, n) })
}

// allowedNames says which names chartRules allows verb on resource for,
// when it allows it only for some.
func allowedNames(role, resource, verb string) string {
	for _, a := range chartRules {
		if a.role == role && a.names != nil && slices.Contains(a.resources, resource) && slices.Contains(a.verbs, verb) {
			return fmt.Sprintf("; it is allowed only on %v: %s", a.names, a.why)
		}
	}
	return ""
}
