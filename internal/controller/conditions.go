package controller

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/migration"
)

// Condition types beyond the ones in api/v1alpha2. WorkloadsReady sums up
// the workload ones, RouterReady the router ones; a type that does not
// apply to a service's shape is removed, so a stale False cannot keep it
// down.
const (
	ConditionMainWorkloadReady          = "MainWorkloadReady"
	ConditionWorkerWorkloadReady        = "WorkerWorkloadReady"
	ConditionPrefillWorkloadReady       = "PrefillWorkloadReady"
	ConditionPrefillWorkerWorkloadReady = "PrefillWorkerWorkloadReady"
	ConditionGatewaysReady              = "GatewaysReady"
	ConditionHTTPRoutesReady            = "HTTPRoutesReady"
	ConditionInferencePoolReady         = "InferencePoolReady"
	ConditionSchedulerWorkloadReady     = "SchedulerWorkloadReady"
	// ConditionAutoscalersReady is True when every actuator spec.scaling
	// asks for is applied, and False with CRDMissing while one is withheld
	// because its API (KEDA's) is not served: the workload then runs
	// unscaled. It is not part of Ready, and is absent without scaling.
	ConditionAutoscalersReady = "AutoscalersReady"
	// ConditionInferencePoolMigrated is True once the route sends traffic
	// to the v1 InferencePool. Its lastTransitionTime starts the grace
	// period after which the v1alpha2 pool is retired.
	ConditionInferencePoolMigrated = migration.ConditionMigrated
)

// Reasons of the conditions.
const (
	ReasonReady            = "Ready"
	ReasonCombined         = "Combined"
	ReasonCombineBaseError = "CombineBaseError"
	ReasonStopped          = "Stopped"
	ReasonRefsInvalid      = "RefsInvalid"
	ReasonCRDMissing       = "CRDMissing"
	ReasonProgressing      = "Progressing"
	ReasonReconcileError   = "ReconcileError"
	ReasonGatewaysNotReady = "GatewaysNotReady"
	ReasonRoutesNotReady   = "HTTPRoutesNotReady"
	ReasonPoolNotReady     = "InferencePoolNotReady"
	ReasonNoRouter         = "NoRouter"
	// ReasonAuthNotEnforced: auth is on and Kuadrant has not reported an
	// AuthPolicy enforced on the service's route (docs/auth.md).
	ReasonAuthNotEnforced = "AuthNotEnforced"
	// ReasonAuthPolicyMissing: auth is on and a Gateway the service's
	// route attaches to has no AuthPolicy, so the route is not applied.
	ReasonAuthPolicyMissing = "AuthPolicyMissing"
)

var (
	workloadConditions = []string{
		ConditionMainWorkloadReady, ConditionWorkerWorkloadReady, ConditionPrefillWorkloadReady, ConditionPrefillWorkerWorkloadReady,
	}
	routerConditions = []string{
		ConditionGatewaysReady, ConditionHTTPRoutesReady, ConditionInferencePoolReady, ConditionSchedulerWorkloadReady,
	}
)

// maxMessage keeps condition messages well under the API's 32 KiB limit.
const maxMessage = 4096

// conditions edits a copy of a service's conditions. A condition whose
// status does not change keeps its lastTransitionTime.
type conditions struct {
	list       []metav1.Condition
	generation int64
	now        metav1.Time
}

func newConditions(svc *v1alpha2.LLMInferenceService, now time.Time) *conditions {
	return &conditions{
		list:       slices.Clone(svc.Status.Conditions),
		generation: svc.Generation,
		now:        metav1.NewTime(now.Truncate(time.Second)),
	}
}

func (c *conditions) set(t string, status metav1.ConditionStatus, reason, message string) {
	if len(message) > maxMessage {
		message = message[:maxMessage-3] + "..."
	}
	meta.SetStatusCondition(&c.list, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message,
		ObservedGeneration: c.generation, LastTransitionTime: c.now,
	})
}

func (c *conditions) setBool(t string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	c.set(t, status, reason, message)
}

func (c *conditions) remove(types ...string) {
	for _, t := range types {
		meta.RemoveStatusCondition(&c.list, t)
	}
}

func (c *conditions) get(t string) *metav1.Condition { return meta.FindStatusCondition(c.list, t) }

// sum sets parent from its sub-conditions: False with the first False
// one's reason and message, else True. Missing or Unknown ones do not
// block.
func (c *conditions) sum(parent string, subs []string, emptyReason string) {
	for _, s := range subs {
		if cond := c.get(s); cond != nil && cond.Status == metav1.ConditionFalse {
			c.set(parent, metav1.ConditionFalse, cond.Reason, cond.Message)
			return
		}
	}
	for _, s := range subs {
		if c.get(s) != nil {
			c.set(parent, metav1.ConditionTrue, ReasonReady, "")
			return
		}
	}
	c.set(parent, metav1.ConditionTrue, emptyReason, "")
}

// ready sets Ready from WorkloadsReady and RouterReady: False with the
// reason of the first that is not True, preferring one that asks the user
// to act (a bad reference, a missing CRD, a failed write) over one that
// only waits.
func (c *conditions) ready() {
	var first *metav1.Condition
	for _, t := range []string{v1alpha2.ConditionWorkloadsReady, v1alpha2.ConditionRouterReady} {
		cond := c.get(t)
		if cond == nil {
			cond = &metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: ReasonProgressing, Message: t + " is not known yet"}
		}
		if cond.Status == metav1.ConditionTrue {
			continue
		}
		if first == nil || (actionable[cond.Reason] && !actionable[first.Reason]) {
			first = cond
		}
	}
	if first != nil {
		c.set(v1alpha2.ConditionReady, metav1.ConditionFalse, first.Reason, first.Message)
		return
	}
	c.set(v1alpha2.ConditionReady, metav1.ConditionTrue, ReasonReady, "")
}

// actionable reasons need someone to change something.
var actionable = map[string]bool{
	ReasonRefsInvalid: true, ReasonCRDMissing: true, ReasonReconcileError: true, ReasonCombineBaseError: true, ReasonStopped: true,
	ReasonAuthPolicyMissing: true,
}

// sorted returns the conditions by type, so the status has one order.
func (c *conditions) sorted() []metav1.Condition {
	out := slices.Clone(c.list)
	slices.SortFunc(out, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	if len(out) == 0 {
		return nil
	}
	return out
}
