// Package apiserver is `odh-serving api-server`: a Kubernetes extension
// (aggregated) API server for Models-as-a-Service (MaaS) that serves
// modelserving.opendatahub.io/v1alpha1 (package api/modelserving/v1alpha1)
// on k8s.io/apiserver's generic server, as the ADR "Extension API Server
// for Model Serving" proposes.
//
// # Why an extension API server
//
// Upstream's maas-api was a REST service that trusted identity headers set
// by the gateway (forged headers impersonated anyone, CVE-2026-14450), had
// an unauthenticated tier lookup, showed every model to every user (#294)
// and let a MaaS token mint more tokens (#343). Behind the cluster's API
// server, identity and permission are the cluster's:
//
//   - Authentication is delegated. The cluster's API server proxies a
//     request with the caller's identity in X-Remote-User/X-Remote-Group,
//     and those headers count only on a connection that presents the front
//     proxy's client certificate (the requestheader CA and allowed names
//     the server reads from kube-system/extension-apiserver-authentication).
//     A bearer token sent to the server directly is checked with a
//     TokenReview; a client certificate against the cluster's client CA.
//   - Authorization is delegated: a SubjectAccessReview per request, so
//     RBAC on models, tierreviews, tokenrequests and tokenrevocations
//     decides. Answers are cached for 10 s (the --authentication-* and
//     --authorization-*-ttl flags).
//   - OpenAPI v2 and v3 are published, so kubectl get, explain and create
//     work. `kubectl get models` prints NAME, MODEL, READY, URL and TIERS.
//
// # No storage
//
// Nothing is stored and there is no etcd. models is a view of the
// LLMInferenceServices in an informer cache, indexed by tier, so a list
// sends no request to the cluster beyond the cached authentication and
// authorization. tierreviews, tokenrequests and tokenrevocations are
// create-only queries like TokenReview: the response is the request with
// its status filled in.
//
// # Tiers
//
// The tiers are the key "tiers" of the ConfigMap --tier-config-name in
// --tier-config-namespace, in ODH's format: a YAML list of {name,
// displayName, description, level, groups}. A user's tier is the one with
// the highest level among those listing one of the user's groups; on a
// tie, the first listed. A tier also lists the group
// system:serviceaccounts:<its namespace>, so a minted token resolves to
// its tier. A tier's namespace is --tier-namespace-prefix + its name; the
// chart creates those namespaces, the server never does.
//
// A user in no tier group: the server has no built-in default tier. As in
// ODH's default mapping, the configuration puts system:authenticated in
// the free tier, and every authenticated user carries that group, so a
// user in no other tier group is free. A configuration without it leaves
// such users tierless: their models list and token requests are 403 with
// a message that names the ConfigMap.
//
// The ConfigMap and the annotation are read by engine/tier, as the
// controller reads them for the services' model-user RBAC, so both agree.
//
// A missing ConfigMap, key or tier, YAML that does not parse, an unknown
// field, an empty or duplicate tier name or one that does not make a
// namespace name: every request that needs a tier is a 503 naming the
// ConfigMap and the field (the server fails closed; it does not keep an
// older configuration).
//
// # Resources
//
//   - models (namespaced; get, list): the services carrying
//     alpha.maas.opendatahub.io/tiers (a JSON list of tier names, []
//     meaning every tier) whose list contains the caller's tier. Other
//     services are NotFound. A service whose annotation is not such a list
//     is unpublished: get answers 404 (NotFound) for every tier, as for a
//     service the tier may not use, and lists in its namespace carry a
//     warning naming the annotation. Tier names the configuration does not
//     define come back as warnings (kubectl prints them).
//   - tierreviews (cluster; create): spec {user, groups} gives status {tier,
//     displayName, level}, or status.error when no tier matches.
//   - tokenrequests (cluster; create): the caller's tier, then the
//     ServiceAccount <sanitized user>-<first 16 hex of sha256(user)> in
//     the tier's namespace (made on first use; one that stands for another
//     user, by its annotation maas.opendatahub.io/username, is refused with
//     409), then a token of it through
//     the TokenRequest API with audience --token-audience and
//     spec.expirationSeconds between 600 and --token-max-expiration
//     (default 14400). A caller that is itself a ServiceAccount of a tier
//     namespace is refused (403): a MaaS token cannot mint tokens.
//   - tokenrevocations (cluster; create): the caller's ServiceAccount (and
//     the one named by 8 hex of sha1 before) is deleted, on a precondition
//     of its UID, and made again; its earlier tokens stop authenticating (the
//     API server's token cache may accept them for up to 10 s more).
//
// # REST endpoints for the MaaS gateway
//
// For OpenAI clients and upstream maas-api's clients, the server answers
// three REST calls, which the MaaS gateway routes to it (the chart's
// HTTPRoute odh-serving-maas-api). Each is a thin forward to a resource's
// own logic, as the caller; nothing is implemented twice:
//
//   - GET /v1/models: the models list of every namespace, in OpenAI's list
//     format {"object": "list", "data": [{id, object: "model", created,
//     owned_by, ready, url}]}: id is spec.modelName, owned_by the
//     namespace, created the service's creation time.
//   - POST /v1/tokens: a tokenrequest. The body is upstream's
//     {"expiration": "4h"} (a Go duration, or a number of seconds; absent,
//     4 h); the answer 201 {"token", "expiration", "expiresAt"}.
//   - DELETE /v1/tokens: a tokenrevocation; the answer 204.
//
// Errors are upstream's {"error": message}, with the resource's status
// code (a bad body or expiration is 400).
//
// Identity there is the bearer token's alone: it is checked with a
// TokenReview for --token-audience (a minted token, as an OpenAI client
// sends it), then for the cluster API server's own audience (the user's
// own token, to mint one). Request headers (X-Remote-User, even on the
// front proxy's certificate), client certificates and the impersonation
// headers (dropped) do not count, and there is no anonymous user: no
// token is 401. Authorization is the RBAC of the resource each call
// forwards to: list models (cluster-wide), create tokenrequests, create
// tokenrevocations.
//
// # Flags
//
// Besides k8s.io/apiserver's serving and delegation flags (--secure-port,
// default 8443; --tls-cert-file, --tls-private-key-file; --client-ca-file;
// --requestheader-*; --authentication-kubeconfig, --authorization-kubeconfig;
// the cache TTLs):
//
//	--kubeconfig              the cluster; default in-cluster, else a single-file $KUBECONFIG
//	--tier-config-namespace   default: the pod's namespace
//	--tier-config-name        default tier-to-group-mapping
//	--tier-namespace-prefix   default maas-default-gateway-tier-
//	--token-audience          default maas-default-gateway-sa
//	--token-max-expiration    default 720h
//
// Without --tls-cert-file the server makes a self-signed certificate in
// memory (local runs; the APIService then needs insecureSkipTLSVerify).
//
// # The server's own RBAC
//
//   - system:auth-delegator (create tokenreviews and subjectaccessreviews);
//   - extension-apiserver-authentication-reader, a Role in kube-system (get,
//     list, watch the extension-apiserver-authentication ConfigMap);
//   - get, list, watch configmaps named --tier-config-name in
//     --tier-config-namespace (the informer lists by field selector
//     metadata.name, which resourceNames allow);
//   - list, watch serving.kserve.io llminferenceservices, cluster-wide;
//   - in each tier namespace: get, create, delete serviceaccounts and
//     create serviceaccounts/token.
//
// Callers need: get, list on models (namespaced Role or ClusterRole);
// create on tierreviews (the gateway's policy engine); create on
// tokenrequests and tokenrevocations (MaaS users).
//
// The kube_requests_total metric (odh_serving_api_server_ prefix) on
// /metrics counts the server's requests to the cluster by verb and
// resource.
package apiserver
