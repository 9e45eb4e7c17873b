// Package controller is the live odh-serving controller: a controller-runtime
// manager that renders every LLMInferenceService with the engine and keeps
// the cluster in step with the result.
//
// Reconcile has one shape, whatever the event: get the service (gone:
// delete its cluster-scoped children; no finalizer holds a service, so
// nothing hangs once the controller is uninstalled); build the preset catalog from the LLMInferenceServiceConfigs in
// the cache over the embedded presets; decide the InferencePool migration
// phase (internal/migration); render; server-side apply each child (field
// manager odh-serving, forced ownership, a controller owner reference);
// delete the children no longer rendered, found by their labels and deleted
// only when this service controls them; write the status when it changed.
//
// In steady state a reconcile writes nothing: a child is applied only when
// the hash of its desired form (kept in the annotation
// odh-serving.opendatahub.io/applied-hash) differs from the live one's, or
// a field it sets was changed by hand. The status is patched only when it
// differs.
//
// The cache holds, of the kinds users make many of (Deployments, Services,
// ServiceAccounts, Roles, RoleBindings, Secrets), only odh-serving's
// objects, selected by label (scope.go); a child's name the cache does not
// hold is checked with the API server before it is first applied, so that
// someone else's object is never taken over.
//
// A workload that is not available says why from its pods (pods.go): how
// many are not Ready and the first cause in the cluster's words (the
// scheduler's Unschedulable message, an image pull failure, a crash loop, a
// failing readiness probe). The cache holds the workloads' pods, slimmed.
//
// A workload that a HorizontalPodAutoscaler or a KEDA ScaledObject scales
// is applied without spec.replicas, after the live count is handed over
// (HandoverFieldManager): the autoscaler owns the field.
//
// Optional APIs (GIE InferencePools in both groups, LeaderWorkerSet, Gateway
// API, KEDA, cert-manager) may be missing at start: the controller watches
// CustomResourceDefinitions and starts the matching watches when they are
// established, with no restart. Until then services that need them report
// CRDMissing.
//
// Models-as-a-Service (--maas): a service carrying the annotation
// alpha.maas.opendatahub.io/tiers is published to the tiers it names. The
// engine builds its access objects (the Role <service>-model-user, verb
// post on the service, and a RoleBinding per tier to the ServiceAccount
// group of the tier's namespace) from the service and the tier list, as
// children like the others: there is one place that decides them, and
// render shows them offline. The controller's part is the input: it reads
// the tier list from the ConfigMap tier-to-group-mapping (its cache holds
// that ConfigMap only, and a change of it reconciles every published
// service) and hands it to the engine. When the annotation or the tier
// list is bad, nothing of the access is applied or pruned: the objects
// stay as they were, TiersBound turns False naming the annotation or the
// ConfigMap, and one Warning event is recorded per new message, so a bad
// input left in place writes nothing more.
package controller
